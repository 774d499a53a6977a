//! Tuning runs in the store (`iolab tune`): the record of each race, kept beside its
//! experiment (whose points are the candidates and whose runs are the race's runs), written
//! after every round so an interruption keeps what was decided, and read back by `iolab
//! report`, `results show` and `results compare`.

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::error::Result;
use crate::results::tune::Tuning;

impl Store {
    /// Records (or brings up to date) a tuning; its experiment must be stored already.
    pub fn save_tuning(&self, t: &Tuning) -> Result<()> {
        let tx = self.write_tx()?;
        tx.execute(
            "INSERT OR REPLACE INTO tunings(experiment_id, job, updated_unix_s, tuning_json)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                t.experiment_id,
                t.job.name,
                super::real::Real(crate::env::sys::unix_time_s()),
                self.json(t)?
            ],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// The tuning of an experiment, if it was one.
    pub fn load_tuning(&self, experiment_id: &str) -> Result<Option<Tuning>> {
        let json: Option<String> = self
            .conn
            .query_row("SELECT tuning_json FROM tunings WHERE experiment_id = ?1", [experiment_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        json.map(|j| {
            decode(&j).map_err(|e| {
                self.err(format!("the tuning of experiment {experiment_id} cannot be read: {e}"))
            })
        })
        .transpose()
    }

    /// Every tuning, newest first; one that cannot be read is left out, named in a warning.
    pub fn tunings(&self) -> Result<Vec<Tuning>> {
        self.tunings_or(|id, e| {
            self.warn_unreadable(&format!("the tuning of experiment {id}"), e);
            Ok(())
        })
    }

    /// Every tuning, newest first; for one that cannot be read, what `unreadable` says (with
    /// its experiment's id and why): an error ends the reading, `Ok` leaves it out.
    pub fn tunings_or(&self, mut unreadable: impl FnMut(&str, String) -> Result<()>) -> Result<Vec<Tuning>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT t.experiment_id, t.tuning_json FROM tunings t JOIN experiments e ON e.id = t.experiment_id
                 ORDER BY e.created_unix_s DESC, e.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut out = vec![];
        for row in rows {
            let (id, json) = row.map_err(|e| self.err(e))?;
            match decode(&json) {
                Ok(t) => out.push(t),
                Err(e) => unreadable(&id, e)?,
            }
        }
        Ok(out)
    }
}

/// A tuning record: decoded, and every candidate it names by index one of its own
/// ([`Tuning::check`]: what its readers index).
fn decode(json: &str) -> std::result::Result<Tuning, String> {
    let t: Tuning = crate::json::from_str(json).map_err(|e| e.to_string())?;
    t.check()?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 7 store is migrated to hold tunings; one saved twice is one row, read back
    /// as it was written; one that names a candidate it lacks is not read.
    #[test]
    fn tunings_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            for m in &super::super::schema::MIGRATIONS[..7] {
                c.execute_batch(m).unwrap();
            }
            c.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '7')", []).unwrap();
            c.execute("INSERT INTO hosts VALUES ('h', 'host', '{}')", []).unwrap();
            c.execute(
                "INSERT INTO experiments(id, created_unix_s, name, host_id, iolab_version, spec_json, host_json, points_json)
                 VALUES ('e1', 1.0, 'tune', 'h', '0', '{}', '{}', '[]')",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.load_tuning("e1").unwrap(), None);
        let mut t = crate::results::tune::sample("e1", "h", 1.0, 1 << 30);
        store.save_tuning(&t).unwrap();
        t.candidates[0].times_s = vec![1.0, 1.5];
        t.elapsed_ns = 5;
        store.save_tuning(&t).unwrap();
        assert_eq!(store.load_tuning("e1").unwrap(), Some(t.clone()));
        assert_eq!(store.tunings().unwrap(), [t.clone()]);

        // A record naming a candidate it does not have (its readers index by it) is unreadable:
        // named, and left out of the list; an import refuses it.
        for (what, bad) in [
            ("baseline", crate::results::tune::Tuning { baseline: 7, ..t.clone() }),
            ("dropped by", {
                let mut b = t.clone();
                b.candidates[1].out = Some(crate::results::tune::Out::Dropped { round: 3, by: 5 });
                b
            }),
        ] {
            store.save_tuning(&bad).unwrap();
            let e = store.load_tuning("e1").unwrap_err().to_string();
            assert!(e.contains("the tuning of experiment e1 cannot be read") && e.contains(what), "{e}");
            assert!(store.tunings().unwrap().is_empty());
            let e = store.tunings_or(|id, why| Err(crate::Error::Run(format!("{id}: {why}")))).unwrap_err();
            assert!(e.to_string().contains("and it has 2"), "{e}");
        }
    }
}
