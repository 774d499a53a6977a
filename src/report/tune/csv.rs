//! A tuning as CSV: one row per candidate in rank order, with its searched values, runs, mean
//! time and 95% interval in seconds, and where it ended.

use std::io::Write;

use crate::error::Result;
use crate::report::{Exporter, write_err};
use crate::results::tune::{Out, Tuning};

pub struct Csv;

impl Exporter<Tuning> for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, t: &Tuning, out: &mut dyn Write) -> Result<()> {
        let keys: Vec<&String> = t.candidates.first().map(|c| c.values.keys().collect()).unwrap_or_default();
        let mut w = csv::Writer::from_writer(out);
        let mut head: Vec<String> =
            ["rank", "point", "candidate", "baseline"].iter().map(|s| s.to_string()).collect();
        head.extend(keys.iter().map(|k| k.to_string()));
        head.extend(
            ["runs", "mean_s", "ci95_lo_s", "ci95_hi_s", "status", "out_round", "out_by_point"]
                .map(String::from),
        );
        w.write_record(&head).map_err(write_err)?;
        let ranked = t.ranked();
        let statuses = super::rows(t);
        for (k, &i) in ranked.iter().enumerate() {
            let c = &t.candidates[i];
            let iv = c.interval();
            let num =
                |x: Option<f64>| x.filter(|v| v.is_finite()).map(|v| format!("{v:.6}")).unwrap_or_default();
            let mut rec = vec![
                (k + 1).to_string(),
                c.point.to_string(),
                c.label.clone(),
                (i == t.baseline).to_string(),
            ];
            rec.extend(keys.iter().map(|key| c.values.get(*key).cloned().unwrap_or_default()));
            let (round, by) = match &c.out {
                Some(Out::Dropped { round, by }) => (round.to_string(), t.candidates[*by].point.to_string()),
                Some(Out::Failed { round, .. }) => (round.to_string(), String::new()),
                Some(Out::NotRaced { .. }) | None => (String::new(), String::new()),
            };
            rec.extend([
                c.runs().to_string(),
                num((iv.n > 0).then_some(iv.mean_s)),
                num(iv.ci95_s.map(|c| c[0])),
                num(iv.ci95_s.map(|c| c[1])),
                statuses[k][6].clone(),
                round,
                by,
            ]);
            w.write_record(&rec).map_err(write_err)?;
        }
        w.flush().map_err(write_err)
    }
}
