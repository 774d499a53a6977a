//! Sweep axes: `KEY=V1,V2`, `KEY=A..B[:STEP|:xFACTOR]` and TOML `[sweep]` tables become axes,
//! and axes become the ordered list of points (a cartesian product, with zipped groups).
//! Pure: no I/O; the machine's memory size comes in as a number for `xRAM` sizes.
//!
//! Ranges are inclusive and stop at the last value not above the end:
//! - `1..8` (1, 2, ..., 8), `1..8:2` (1, 3, 5, 7), `1..8:x2` (1, 2, 4, 8): plain integers;
//! - `2KiB..128KiB:x8` (2KiB, 16KiB, 128KiB), `128MiB..1GiB:64MiB`, `1xRAM..4xRAM:1xRAM`:
//!   sizes, printed back in the spec's size syntax.
//!
//! An axis whose key is not a spec parameter is a *variable*: each `{KEY}` in any parameter
//! value is replaced by the point's value (so `ops = "write:workers={k},read:workers={n}"`
//! sweeps two phase modifiers at once).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::experiment::PARAMS;
pub use crate::results::Axis;

use super::range::expand_range;

/// Most values one axis may have, and most points one experiment may have.
pub const MAX_VALUES: usize = 10_000;
pub const MAX_POINTS: usize = 100_000;

/// The axes of an experiment and the groups of them that advance together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    pub axes: Vec<Axis>,
    /// Each group's axes take their i-th values together (the groups must have equal lengths).
    pub zip: Vec<Vec<String>>,
}

/// One point: (axis key, value) in axis order.
pub type Assignment = Vec<(String, String)>;

pub(super) fn err(key: &str, value: impl ToString, reason: impl Into<String>) -> Error {
    Error::spec(format!("sweep {key}"), value, reason)
}

/// Whether `key` is a list parameter (`dirs`, `ops`), whose values hold commas.
fn is_list_key(key: &str) -> bool {
    PARAMS.iter().any(|d| d.key == key && d.list)
}

pub use crate::spec::params::is_param;

/// The parameter a key names (`dir` -> `dirs`, `-` -> `_`), or the variable name unchanged.
pub fn normal_key(key: &str) -> String {
    match key.replace('-', "_").as_str() {
        "dir" => "dirs".into(),
        "op" => "ops".into(),
        k if is_param(k) => k.to_string(),
        _ => key.to_string(),
    }
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(err(key, "", "an axis needs a name (KEY=VALUES)"));
    }
    if key == "interleave" {
        return Err(err(key, "", "the run order applies to the whole experiment; it cannot be an axis"));
    }
    let ident = key.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !is_param(key) && !ident {
        return Err(err(key, "", "a variable axis is named with lower-case letters, digits and _"));
    }
    Ok(())
}

/// Parses `--sweep KEY=VALUES`. Values are separated by `,` (by `;` for `dirs` and `ops`,
/// whose values hold commas); each may be a range.
pub fn parse_arg(arg: &str, ram_bytes: u64) -> Result<Axis> {
    let (key, text) =
        arg.split_once('=').ok_or_else(|| err(arg, arg, "expected KEY=V1,V2,... or KEY=A..B"))?;
    let key = normal_key(key.trim());
    axis_from_text(&key, text.trim(), ram_bytes)
}

/// An axis from one string in the CLI syntax.
pub fn axis_from_text(key: &str, text: &str, ram_bytes: u64) -> Result<Axis> {
    let sep = if is_list_key(key) { ';' } else { ',' };
    let items: Vec<String> = text.split(sep).map(|s| s.trim().to_string()).collect();
    axis_from_items(key, text, &items, ram_bytes)
}

/// An axis from separate items (a TOML array), each a value or a range.
pub fn axis_from_items(key: &str, text: &str, items: &[String], ram_bytes: u64) -> Result<Axis> {
    check_key(key)?;
    let mut values = vec![];
    for item in items {
        if item.is_empty() {
            return Err(err(key, text, "empty value"));
        }
        match (!is_list_key(key)).then(|| expand_range(key, item, ram_bytes)).transpose()?.flatten() {
            Some(vs) => values.extend(vs),
            None => values.push(item.clone()),
        }
        if values.len() > MAX_VALUES {
            return Err(err(key, text, format!("more than {MAX_VALUES} values")));
        }
    }
    if values.is_empty() {
        return Err(err(key, text, "an axis needs at least one value"));
    }
    Ok(Axis { key: key.to_string(), text: text.to_string(), values })
}

/// Parses `--zip A,B` into a group.
pub fn parse_zip(arg: &str) -> Vec<String> {
    arg.split(',').map(|s| normal_key(s.trim())).filter(|s| !s.is_empty()).collect()
}

impl Sweep {
    /// Adds an axis of one source (the command line's `--sweep`s, or one `[sweep]` table): a
    /// key swept twice there is refused, naming both (only one of them could count).
    pub fn add(&mut self, axis: Axis) -> Result<()> {
        if let Some(a) = self.axes.iter().find(|a| a.key == axis.key) {
            return Err(err(
                &axis.key,
                &axis.text,
                format!(
                    "{} is swept twice ({0}={} and {0}={}); give its values in one sweep",
                    axis.key, a.text, axis.text
                ),
            ));
        }
        self.axes.push(axis);
        Ok(())
    }

    /// Adds an axis over another source's: a later axis with the same key replaces the
    /// earlier one in place (the command line's over a file's, a scale's over a preset's).
    pub fn push(&mut self, axis: Axis) {
        match self.axes.iter_mut().find(|a| a.key == axis.key) {
            Some(a) => *a = axis,
            None => self.axes.push(axis),
        }
    }

    /// The points, in order: the cartesian product over groups (a zip group, or one axis),
    /// the first group outermost; each point lists its values in axis order. No axes: one
    /// empty point.
    pub fn points(&self) -> Result<Vec<Assignment>> {
        // Groups in the order of their first axis.
        let mut group_of: BTreeMap<&str, usize> = BTreeMap::new();
        for (g, group) in self.zip.iter().enumerate() {
            if group.len() < 2 {
                return Err(err(&group.join(","), group.join(","), "a zip group needs at least two axes"));
            }
            for key in group {
                if !self.axes.iter().any(|a| &a.key == key) {
                    return Err(err(key, group.join(","), "zip names an axis that does not exist"));
                }
                if group_of.insert(key, g).is_some() {
                    return Err(err(key, group.join(","), "an axis can be in only one zip group"));
                }
            }
            let lens: Vec<usize> = group.iter().map(|k| self.axis(k).values.len()).collect();
            if lens.iter().any(|&l| l != lens[0]) {
                let desc: Vec<String> =
                    group.iter().zip(&lens).map(|(k, l)| format!("{k} has {l}")).collect();
                return Err(err(
                    &group[0],
                    group.join(","),
                    format!("zipped axes need equal lengths ({})", desc.join(", ")),
                ));
            }
        }
        let mut groups: Vec<Vec<usize>> = vec![];
        let mut seen_zip: Vec<usize> = vec![];
        for (i, a) in self.axes.iter().enumerate() {
            match group_of.get(a.key.as_str()) {
                Some(&g) if seen_zip.contains(&g) => {}
                Some(&g) => {
                    seen_zip.push(g);
                    groups.push(self.zip[g].iter().map(|k| self.index(k)).collect());
                }
                None => groups.push(vec![i]),
            }
        }
        let total = groups.iter().try_fold(1usize, |n, g| n.checked_mul(self.axes[g[0]].values.len()));
        if total.is_none_or(|n| n > MAX_POINTS) {
            return Err(err(&self.axes[0].key, "", format!("more than {MAX_POINTS} points")));
        }
        let mut out = vec![];
        let mut idx = vec![0usize; groups.len()];
        loop {
            let mut point: Vec<(usize, String)> = vec![];
            for (g, group) in groups.iter().enumerate() {
                for &a in group {
                    point.push((a, self.axes[a].values[idx[g]].clone()));
                }
            }
            point.sort_by_key(|(a, _)| *a);
            out.push(point.into_iter().map(|(a, v)| (self.axes[a].key.clone(), v)).collect());
            // Odometer: the last group turns fastest.
            let mut g = groups.len();
            loop {
                if g == 0 {
                    return Ok(out);
                }
                g -= 1;
                idx[g] += 1;
                if idx[g] < self.axes[groups[g][0]].values.len() {
                    break;
                }
                idx[g] = 0;
            }
        }
    }

    fn index(&self, key: &str) -> usize {
        self.axes.iter().position(|a| a.key == key).expect("checked axis")
    }

    fn axis(&self, key: &str) -> &Axis {
        &self.axes[self.index(key)]
    }
}

/// Replaces each `{NAME}` of a variable by its value.
pub fn substitute(text: &str, vars: &[(String, String)]) -> String {
    let mut s = text.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// The first `{name}` placeholder left in `text`, if any.
pub fn placeholder(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = start + text[start..].find('}')?;
    let name = &text[start + 1..end];
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(name)
}

/// The keys of the table at `path` in a TOML document, in the order they are written
/// (TOML tables are read in key order otherwise, which would reorder the axes).
pub fn toml_key_order(text: &str, path: &[&str]) -> Vec<String> {
    use toml::de::{DeTable, DeValue};
    let Ok(doc) = DeTable::parse(text) else { return vec![] };
    let mut table: &DeTable<'_> = doc.get_ref();
    for name in path {
        let next = table.iter().find(|(k, _)| k.get_ref().as_ref() == *name).map(|(_, v)| v.get_ref());
        match next {
            Some(DeValue::Table(t)) => table = t,
            _ => return vec![],
        }
    }
    let mut keys: Vec<(usize, String)> =
        table.iter().map(|(k, _)| (k.span().start, k.get_ref().to_string())).collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

/// Reads a `[sweep]` table (axes: a string in the CLI syntax or an array of values or
/// ranges; `zip`: one group `["a", "b"]` or several `[["a", "b"], ["c", "d"]]`). `order` is
/// the key order as written.
pub fn from_toml(table: &toml::Table, order: &[String], ram_bytes: u64) -> Result<Sweep> {
    let mut sweep = Sweep::default();
    let mut keys: Vec<&String> = order.iter().filter(|k| table.contains_key(*k)).collect();
    for k in table.keys() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let scalar = |key: &str, v: &toml::Value| -> Result<String> {
        match v {
            toml::Value::String(s) => Ok(s.clone()),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(f.to_string()),
            toml::Value::Boolean(b) => Ok(b.to_string()),
            other => Err(err(key, other, "expected a string, number or boolean")),
        }
    };
    for key in keys {
        let value = &table[key];
        if key == "zip" {
            let groups = match value {
                toml::Value::Array(a) if a.iter().all(|v| v.is_str()) => vec![value.clone()],
                toml::Value::Array(a) => a.clone(),
                other => return Err(err("zip", other, "expected [\"a\", \"b\"] or [[\"a\", \"b\"], ...]")),
            };
            for g in groups {
                let names = g.as_array().ok_or_else(|| err("zip", &g, "expected an array of axis names"))?;
                let group: Result<Vec<String>> =
                    names.iter().map(|n| scalar("zip", n).map(|s| normal_key(&s))).collect();
                sweep.zip.push(group?);
            }
            continue;
        }
        let nk = normal_key(key);
        let axis = match value {
            toml::Value::Array(items) => {
                let items: Vec<String> = items.iter().map(|v| scalar(key, v)).collect::<Result<_>>()?;
                axis_from_items(&nk, &items.join(", "), &items, ram_bytes)?
            }
            other => axis_from_text(&nk, &scalar(key, other)?, ram_bytes)?,
        };
        sweep.add(axis)?;
    }
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(arg: &str) -> Vec<String> {
        parse_arg(arg, 1 << 30).unwrap().values
    }

    fn field(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(Error::Spec { field, .. }) => field,
            other => panic!("expected a spec error, got {other:?}"),
        }
    }

    #[test]
    fn lists_and_integer_ranges() {
        assert_eq!(values("bs=2KiB,16KiB,128KiB"), ["2KiB", "16KiB", "128KiB"]);
        assert_eq!(values("workers=1..8"), ["1", "2", "3", "4", "5", "6", "7", "8"]);
        assert_eq!(values("workers=1..8:2"), ["1", "3", "5", "7"]);
        assert_eq!(values("workers=1..8:x2"), ["1", "2", "4", "8"]);
        assert_eq!(values("workers=1..9:x2"), ["1", "2", "4", "8"]);
        assert_eq!(values("workers=3..3"), ["3"]);
        assert_eq!(values("workers=1..2,8"), ["1", "2", "8"]);
    }

    #[test]
    fn size_ranges() {
        assert_eq!(values("bs=2KiB..128KiB:x8"), ["2KiB", "16KiB", "128KiB"]);
        assert_eq!(values("size=128MiB..512MiB:128MiB"), ["128MiB", "256MiB", "384MiB", "512MiB"]);
        assert_eq!(values("size=1MiB..2MiB:768KiB"), ["1MiB", "1792KiB"]);
        assert_eq!(values("size=64KiB..1MiB:x4"), ["64KiB", "256KiB", "1MiB"]);
        // Multiples of memory stay multiples of memory (1 GiB of it here), rounded to whole
        // blocks only when each point is resolved.
        assert_eq!(values("size=0.5xRAM..2xRAM:0.5xRAM"), ["0.5xRAM", "1xRAM", "1.5xRAM", "2xRAM"]);
        assert_eq!(values("size=0.25xRAM..2xRAM:x2"), ["0.25xRAM", "0.5xRAM", "1xRAM", "2xRAM"]);
        assert_eq!(values("size=1xRAM..1.6xRAM:0.25xRAM"), ["1xRAM", "1.25xRAM", "1.5xRAM"]);
        assert_eq!(values("size=512MiB..2xRAM:512MiB"), ["512MiB", "1GiB", "1536MiB", "2GiB"]);
        assert_eq!(values("size=256MiB..1xRAM:x2"), ["256MiB", "512MiB", "1GiB"]);
        for bad in ["size=1xRAM..4xRAM:1GiB", "size=1xRAM..4xRAM", "size=1GiB..4xRAM:1xRAM"] {
            let e = parse_arg(bad, 1 << 30).unwrap_err();
            assert!(matches!(e, Error::Spec { ref field, .. } if field == "sweep size"), "{bad}: {e}");
        }
        assert_eq!(values("size=1000..3000:1000"), ["1000", "2000", "3000"]);
        assert_eq!(values("size=1kB..3kB:1kB"), ["1000", "2000", "3000"]);
    }

    #[test]
    fn list_keys_split_on_semicolons_and_never_expand_ranges() {
        assert_eq!(values("ops=write;write,read:cold"), ["write", "write,read:cold"]);
        assert_eq!(values("dir=../a;../b"), ["../a", "../b"]);
    }

    #[test]
    fn bad_axes_name_the_axis() {
        assert_eq!(field(parse_arg("workers=8..1", 0)), "sweep workers");
        assert_eq!(field(parse_arg("workers=1..8:0", 0)), "sweep workers");
        assert_eq!(field(parse_arg("workers=1..8:x1", 0)), "sweep workers");
        assert_eq!(field(parse_arg("bs=0..4KiB:x2", 0)), "sweep bs");
        assert_eq!(field(parse_arg("bs=4KiB..lots", 0)), "sweep bs");
        assert_eq!(field(parse_arg("bs=4KiB,,8KiB", 0)), "sweep bs");
        assert_eq!(field(parse_arg("workers=1..100000", 0)), "sweep workers");
        assert_eq!(field(parse_arg("interleave=shuffle", 0)), "sweep interleave");
        assert_eq!(field(parse_arg("Bad-Name=1", 0)), "sweep Bad-Name");
        assert!(parse_arg("noequals", 0).is_err());
    }

    fn sweep(args: &[&str], zip: &[&str]) -> Sweep {
        let mut s = Sweep::default();
        for a in args {
            s.push(parse_arg(a, 0).unwrap());
        }
        s.zip = zip.iter().map(|z| parse_zip(z)).collect();
        s
    }

    fn pts(s: &Sweep) -> Vec<String> {
        s.points()
            .unwrap()
            .iter()
            .map(|p| p.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn product_is_ordered_first_axis_outermost() {
        let s = sweep(&["bs=2KiB,16KiB", "workers=1..3"], &[]);
        assert_eq!(
            pts(&s),
            [
                "bs=2KiB workers=1",
                "bs=2KiB workers=2",
                "bs=2KiB workers=3",
                "bs=16KiB workers=1",
                "bs=16KiB workers=2",
                "bs=16KiB workers=3",
            ]
        );
        assert_eq!(Sweep::default().points().unwrap(), vec![vec![]]);
    }

    #[test]
    fn zip_advances_axes_together() {
        let s = sweep(&["workers=1,2,4", "bs=4KiB,16KiB", "size=8MiB,4MiB,2MiB"], &["workers,size"]);
        assert_eq!(
            pts(&s),
            [
                "workers=1 bs=4KiB size=8MiB",
                "workers=1 bs=16KiB size=8MiB",
                "workers=2 bs=4KiB size=4MiB",
                "workers=2 bs=16KiB size=4MiB",
                "workers=4 bs=4KiB size=2MiB",
                "workers=4 bs=16KiB size=2MiB",
            ]
        );
        // A zip group whose first axis comes later keeps the position of its first axis.
        let s = sweep(&["bs=4KiB,16KiB", "workers=1,2", "size=8MiB,4MiB"], &["size,workers"]);
        assert_eq!(
            pts(&s),
            [
                "bs=4KiB workers=1 size=8MiB",
                "bs=4KiB workers=2 size=4MiB",
                "bs=16KiB workers=1 size=8MiB",
                "bs=16KiB workers=2 size=4MiB"
            ]
        );
    }

    /// A key swept twice in one source is refused naming both values, however it is spelled;
    /// the command line's sweep over a file's replaces it.
    #[test]
    fn a_key_swept_twice_is_refused() {
        let mut s = Sweep::default();
        s.add(parse_arg("bs=4KiB,8KiB", 0).unwrap()).unwrap();
        let e = s.add(parse_arg("bs=16KiB", 0).unwrap()).unwrap_err().to_string();
        assert_eq!(
            e,
            "sweep bs = `16KiB`: bs is swept twice (bs=4KiB,8KiB and bs=16KiB); give its values in one sweep"
        );
        let t: toml::Table = toml::from_str("dir = \"/a;/b\"\ndirs = \"/c\"\n").unwrap();
        let e = from_toml(&t, &[], 0).unwrap_err().to_string();
        assert!(e.contains("dirs is swept twice"), "{e}");
        s.push(parse_arg("bs=16KiB", 0).unwrap());
        assert_eq!(s.axes.len(), 1);
        assert_eq!(s.axes[0].text, "16KiB");
    }

    #[test]
    fn bad_zips_are_refused() {
        assert_eq!(field(sweep(&["workers=1,2", "bs=4KiB"], &["workers,bs"]).points()), "sweep workers");
        assert_eq!(field(sweep(&["workers=1,2"], &["workers,nothere"]).points()), "sweep nothere");
        assert_eq!(field(sweep(&["workers=1,2"], &["workers"]).points()), "sweep workers");
        assert!(sweep(&["a=1,2", "b=1,2", "c=1,2"], &["a,b", "b,c"]).points().is_err());
    }

    #[test]
    fn later_axes_replace_earlier_ones_in_place() {
        let s = sweep(&["bs=1,2", "workers=1,2", "bs=3"], &[]);
        assert_eq!(pts(&s), ["bs=3 workers=1", "bs=3 workers=2"]);
    }

    #[test]
    fn variables_substitute() {
        let vars = vec![("k".to_string(), "2".to_string()), ("n".to_string(), "4".to_string())];
        assert_eq!(substitute("write:workers={k},read:workers={n}", &vars), "write:workers=2,read:workers=4");
        assert_eq!(placeholder("write:workers={k}"), Some("k"));
        assert_eq!(placeholder("write:workers=2"), None);
    }

    #[test]
    fn toml_tables_keep_their_written_order() {
        let text = "name = \"x\"\n[sweep]\nworkers = \"1..2\"\nbs = [\"4KiB\", \"16KiB..32KiB:x2\"]\nzip = [\"workers\", \"bs\"]\n[preset.quick.sweep]\nz = 1\na = 2\n";
        assert_eq!(toml_key_order(text, &["sweep"]), ["workers", "bs", "zip"]);
        assert_eq!(toml_key_order(text, &["preset", "quick", "sweep"]), ["z", "a"]);
        let doc: toml::Table = text.parse().unwrap();
        let s = from_toml(doc["sweep"].as_table().unwrap(), &toml_key_order(text, &["sweep"]), 0).unwrap();
        assert_eq!(s.axes[0].key, "workers");
        assert_eq!(s.axes[1].values, ["4KiB", "16KiB", "32KiB"]);
        assert_eq!(s.zip, [["workers", "bs"]]);
        assert!(s.points().is_err(), "2 workers against 3 block sizes");
    }
}
