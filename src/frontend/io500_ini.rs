//! io500's config file (`iolab reproduce IO500 --ini io500.ini`) over the IO500 preset: its
//! sections and keys (`[global] datadir`, `[debug] stonewall-time`, `[ior-easy]
//! transferSize`/`blockSize`, `[ior-hard] segmentCount`, `[mdtest-easy]` and `[mdtest-hard]`
//! `n`, each phase's `run`, ...) set the workload set's sizes, target and stonewall; a key or
//! value iolab cannot honour is refused by name, a key iolab does not know too.

use crate::error::{Error, Result};
use crate::experiment::Experiment;

use super::Translation;
use super::args;

const FIELD: &str = "io500 ini";

/// ior-hard's transfer and block (IO500's fixed 47008 bytes).
pub const HARD_BYTES: u64 = 47008;

/// The workloads of the preset, as its `workload` axis names them.
const WORKLOADS: [&str; 4] = ["ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"];

/// The phase sections io500 has that the preset runs, and those it has not built.
const PHASES: &[&str] = &[
    "ior-easy-write",
    "ior-easy-read",
    "ior-hard-write",
    "ior-hard-read",
    "mdtest-easy-write",
    "mdtest-easy-stat",
    "mdtest-easy-delete",
    "mdtest-hard-write",
    "mdtest-hard-stat",
    "mdtest-hard-read",
    "mdtest-hard-delete",
    "find",
    "timestamp",
];
const NOT_BUILT: &[&str] = &[
    "find-easy",
    "find-hard",
    "ior-rnd4K-easy-read",
    "ior-rnd1MB-easy-read",
    "mdworkbench",
    "mdworkbench-create",
    "mdworkbench-bench",
    "mdworkbench-delete",
];

/// A number of io500's (IOR's syntax: `2m`), its error naming the ini line.
fn num(at: &str, v: &str) -> Result<u64> {
    args::number(FIELD, v).map_err(|e| match e {
        Error::Spec { reason, .. } => Error::spec(FIELD, at, reason),
        other => other,
    })
}

fn truth(key: &str, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(Error::spec(FIELD, format!("{key} = {v}"), "expected TRUE or FALSE")),
    }
}

/// The preset's experiment `exp` with the ini file's settings.
pub fn apply(text: &str, mut exp: Experiment) -> Result<Translation> {
    let ini =
        ini::Ini::load_from_str(text).map_err(|e| Error::spec(FIELD, "", format!("not an ini file: {e}")))?;
    let mut t = Translation::new("io500");
    let mut stonewall: u64 = 300;
    let mut drop = false;
    let mut skip = vec![];
    let mut sets: Vec<(usize, &str, String, String)> = vec![]; // (workload, axis, value, from)
    for (section, props) in ini.iter() {
        let sec = section.unwrap_or("");
        for (key, value) in props.iter() {
            let at = format!("[{sec}] {key} = {value}");
            let empty = value.trim().is_empty();
            let api_ok = |v: &str| v.is_empty() || v.eq_ignore_ascii_case("POSIX");
            match (sec, key) {
                ("global", "datadir") => {
                    t.set_list("dirs", vec![value.to_string()], &at)?;
                    t.note(format!("datadir {value}: iolab works in its own work directory there (.iolab-RUNID); it must exist"));
                }
                ("global", "timestamp-datadir" | "resultdir" | "timestamp-resultdir" | "verbosity") => {}
                ("global", "api") | (_, "API") if api_ok(value.trim()) => {}
                ("global", "drop-caches") => drop = truth(key, value)?,
                ("global", "drop-caches-cmd") => {
                    t.note(format!(
                        "{at}: iolab drops the caches itself (3 to /proc/sys/vm/drop_caches, root only)"
                    ));
                }
                ("global", "dataPacketType") if value.trim() == "timestamp" => {}
                ("global", "io-buffers-on-gpu" | "scc") if !truth(key, value)? => {}
                ("debug", "stonewall-time") => {
                    stonewall = num(&at, value)?;
                }
                ("debug", "pause-dir") if empty => {}
                ("ior-easy", "transferSize") => {
                    sets.push((0, "bs", num(&at, value)?.to_string(), at.clone()))
                }
                ("ior-easy", "blockSize") => sets.push((0, "size", num(&at, value)?.to_string(), at.clone())),
                ("ior-easy", "filePerProc") if truth(key, value)? => {}
                ("ior-easy", "filePerProc") => sets.push((0, "layout", "shared".into(), at.clone())),
                ("ior-easy", "uniqueDir") if !truth(key, value)? => {}
                ("ior-hard", "segmentCount") => {
                    let n = num(&at, value)?;
                    sets.push((1, "size", n.saturating_mul(HARD_BYTES).to_string(), at.clone()));
                }
                ("ior-hard" | "ior-hard-write" | "ior-hard-read", "collective")
                    if empty || !truth(key, value)? => {}
                ("mdtest-easy", "n") => sets.push((2, "md_files", num(&at, value)?.to_string(), at.clone())),
                ("mdtest-hard", "n") => sets.push((3, "md_files", num(&at, value)?.to_string(), at.clone())),
                ("mdtest-hard", "files-per-dir") if empty => {}
                (w, "run") if WORKLOADS.contains(&w) => {
                    if !truth(key, value)? {
                        skip.push(WORKLOADS.iter().position(|x| *x == w).expect("a workload"));
                    }
                }
                (p, "run") if PHASES.contains(&p) && truth(key, value)? => {}
                (p, "run") if NOT_BUILT.contains(&p) && !truth(key, value)? => {}
                (
                    "find" | "find-easy" | "find-hard",
                    "external-script" | "external-mpi-args" | "external-extra-args" | "nproc",
                ) if empty => {}
                ("find" | "find-easy" | "find-hard", k) if k.starts_with("pfind-") => {
                    t.note(format!("{at}: pfind's own tuning; iolab's walk has none"));
                }
                (p, "verbosity") if WORKLOADS.contains(&p) => {}
                _ => {
                    let why = if NOT_BUILT.contains(&sec) {
                        format!("io500's {sec} is not built in iolab's workload set (give run = FALSE)")
                    } else if PHASES.contains(&sec) && key == "run" {
                        "iolab runs every phase of a workload; leave the whole workload out with its own section's run = FALSE".to_string()
                    } else {
                        "a key or value iolab cannot honour (docs/ior.md lists what it reads)".to_string()
                    };
                    return Err(Error::spec(FIELD, at, why));
                }
            }
        }
    }
    // The sizes per workload, over the preset's zipped axes.
    let index = |exp: &Experiment| -> Vec<String> {
        exp.sweep.axes.iter().find(|a| a.key == "workload").map(|a| a.values.clone()).unwrap_or_default()
    };
    let names = index(&exp);
    for (w, axis, value, from) in sets {
        let Some(i) = names.iter().position(|n| n == WORKLOADS[w]) else { continue };
        let a = exp
            .sweep
            .axes
            .iter_mut()
            .find(|a| a.key == axis)
            .ok_or_else(|| Error::spec(FIELD, &from, "the preset has no such axis"))?;
        a.values[i] = value;
        let o = t.origins.entry(format!("sweep {axis}")).or_default();
        *o = if o.is_empty() { from } else { format!("{o}; {from}") };
    }
    // The stonewall of every write phase, with wear-out, as io500 runs them.
    for a in exp.sweep.axes.iter_mut() {
        match a.key.as_str() {
            "ops" => {
                for v in a.values.iter_mut() {
                    let phases: Vec<String> = v
                        .split(',')
                        .map(|p| {
                            let p = p.split(":stonewall=").next().unwrap_or(p);
                            let bounded = p == "write" || p == "create";
                            let cold = drop && matches!(p, "find" | "stat" | "read-files" | "unlink");
                            if bounded && stonewall > 0 {
                                format!("{p}:stonewall={stonewall}s")
                            } else if cold {
                                format!("{p}:cold")
                            } else {
                                p.to_string()
                            }
                        })
                        .collect();
                    *v = phases.join(",");
                }
                a.text = a.values.join(";");
            }
            "wear_out" => a.values.iter_mut().for_each(|v| *v = (stonewall > 0).to_string()),
            _ => {}
        }
    }
    t.origins.insert("sweep ops".into(), format!("[debug] stonewall-time = {stonewall} (io500's default 300): every write phase stonewalled, with wear-out"));
    if drop {
        t.set("drop_caches", "true", "[global] drop-caches = TRUE")?;
        t.note("drop-caches = TRUE: every read and metadata phase after a write starts cold (committed, evicted, 3 written to drop_caches: root only)");
    } else {
        t.note("drop-caches = FALSE (io500's default): io500 leaves the caches; the preset's data reads still start from a cache verified cold, its metadata phases as the phase before left them");
    }
    // Workloads with run = FALSE leave every zipped axis.
    let mut at: Vec<(usize, &str)> = skip
        .iter()
        .filter_map(|&w| names.iter().position(|n| n == WORKLOADS[w]).map(|i| (i, WORKLOADS[w])))
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut count = names.len();
    for &(i, w) in at.iter().rev() {
        for a in exp.sweep.axes.iter_mut().filter(|a| a.values.len() == count) {
            a.values.remove(i);
            a.text = a.values.join(if a.key == "ops" { ";" } else { "," });
        }
        count -= 1;
        t.note(format!("[{w}] run = FALSE: left out, and with it the score (which needs every workload)"));
    }
    t.note("io500's find-easy, find-hard, ior-rnd4K-easy-read and mdworkbench phases are not built: iolab's score is over the twelve phases of io500's scoring it runs");
    let params = std::mem::take(&mut t.experiment.params);
    exp.params.overlay(&params);
    t.experiment = exp;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset() -> Experiment {
        crate::experiment::preset::find("IO500")
            .unwrap()
            .experiment(crate::experiment::preset::Scale::Quick, &[], 1 << 30)
            .unwrap()
    }

    fn axis<'a>(t: &'a Translation, key: &str) -> &'a [String] {
        &t.experiment.sweep.axes.iter().find(|a| a.key == key).unwrap().values
    }

    #[test]
    fn the_ini_sets_the_workloads_sizes_target_and_stonewall() {
        let dir = std::env::temp_dir().display().to_string();
        let text = format!(
            "[global]\ndatadir = {dir}\ndrop-caches = TRUE\n[debug]\nstonewall-time = 30\n[ior-easy]\ntransferSize = 1m\nblockSize = 64m\n[ior-hard]\nsegmentCount = 100\n[mdtest-easy]\nn = 2000\n[mdtest-hard]\nn = 1500\n[find]\nrun = TRUE\n"
        );
        let t = apply(&text, preset()).unwrap();
        assert_eq!(axis(&t, "bs")[0], "1048576");
        assert_eq!(axis(&t, "size")[0], (64u64 << 20).to_string());
        assert_eq!(axis(&t, "size")[1], (100 * HARD_BYTES).to_string());
        assert_eq!(axis(&t, "md_files")[2..], ["2000", "1500"]);
        assert_eq!(axis(&t, "ops")[0], "write:stonewall=30s,read:cold");
        assert_eq!(
            axis(&t, "ops")[3],
            "create:stonewall=30s,find:cold,stat:cold,read-files:cold,unlink:cold"
        );
        assert!(axis(&t, "wear_out").iter().all(|v| v == "true"));
        assert_eq!(t.experiment.params.one("drop_caches"), Some("true"));
        assert_eq!(t.experiment.params.0["dirs"], [dir]);
        let env = crate::experiment::ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
        assert_eq!(t.experiment.build(&env).unwrap().points.len(), 4);
        // A workload left out leaves every zipped axis.
        let t = apply("[mdtest-hard]\nrun = FALSE\n", preset()).unwrap();
        assert_eq!(axis(&t, "workload"), ["ior-easy", "ior-hard", "mdtest-easy"]);
        assert_eq!(axis(&t, "md_size").len(), 3);
    }

    #[test]
    fn keys_iolab_cannot_honour_are_refused_by_name() {
        for (text, names) in [
            ("[global]\napi = DFS\n", "api = DFS"),
            ("[ior-easy]\nuniqueDir = TRUE\n", "uniqueDir = TRUE"),
            ("[find]\nexternal-script = ./x.sh\n", "external-script"),
            ("[ior-rnd4K-easy-read]\nrun = TRUE\n", "ior-rnd4K-easy-read"),
            ("[mdtest-easy-stat]\nrun = FALSE\n", "mdtest-easy-stat"),
            ("[ior-hard]\nsegmentCount = lots\n", "segmentCount = lots"),
            ("[global]\nnonsense = 1\n", "nonsense"),
        ] {
            let e = apply(text, preset()).unwrap_err().to_string();
            assert!(e.starts_with("io500 ini") && e.contains(names), "{text}: {e}");
        }
    }
}
