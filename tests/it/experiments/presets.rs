//! The studies' presets: every one parses and validates as far as this build allows, every
//! available one runs at quick scale with real I/O, `--list` tells the truth, and a printed
//! preset runs as a file.

use iolab::error::Error;
use iolab::experiment::ResolveEnv;
use iolab::experiment::preset::{self, Preset, Scale};
use iolab::experiment::sweep;

use crate::util::*;

/// Parameters (and layout values) that other parts of iolab are building; a preset may use
/// them before they exist, and is then unavailable.
const PENDING_KEYS: &[&str] = &[
    "launcher",
    "start",
    "files",
    "files_per_worker",
    "iters",
    "comptime",
    "strategy",
    "window",
    "mem_len",
    "mem_stride",
    "stripe_unit",
    "stripe_count",
    "targets",
    "latency",
];
// mpiio: MPI-IO's engine runs only on MPI ranks (B-mpi-strided zips it with MPI-IO).
const PENDING_VALUES: &[&str] =
    &["striped", "striped-per-worker", "vsync", "mmap", "uring", "msync", "trace", "mpiio"];

const SCALES: [Scale; 3] = [Scale::Quick, Scale::Default, Scale::Paper];

/// The machine the binary under test assumes (util's $IOLAB_RAM_BYTES), so what the library
/// resolves here is what the binary resolves.
fn env(dir: &std::path::Path) -> ResolveEnv {
    ResolveEnv { ram_bytes: TEST_RAM_BYTES, cwd: dir.to_path_buf() }
}

fn is_pending(text: &str) -> bool {
    PENDING_KEYS.iter().any(|k| text.contains(k)) || PENDING_VALUES.iter().any(|v| text.contains(v))
}

/// The preset with everything pending taken out: pending keys and values, per-phase
/// modifiers, zip groups and variables left without a use. What remains must resolve today.
fn core_part(p: &Preset) -> Preset {
    let mut doc: toml::Table = p.text.parse().unwrap();
    fn strip_table(t: &mut toml::Table) {
        t.retain(|k, _| !PENDING_KEYS.contains(&k));
        for (k, v) in t.iter_mut() {
            match v {
                toml::Value::String(s) if PENDING_VALUES.contains(&s.as_str()) => {
                    *v = toml::Value::String(default_of(k))
                }
                toml::Value::Array(a) if k != "zip" => {
                    a.retain(|x| !x.as_str().is_some_and(|s| PENDING_VALUES.contains(&s)));
                    for x in a.iter_mut() {
                        if let toml::Value::String(s) = x {
                            *s = s.split(',').map(strip_modifiers).collect::<Vec<_>>().join(",");
                        }
                    }
                }
                _ => {}
            }
        }
    }
    fn default_of(key: &str) -> String {
        match key {
            "layout" => "file-per-worker".into(),
            "engine" => "psync".into(),
            "sync_call" => "fdatasync".into(),
            other => panic!("no default for {other}"),
        }
    }
    fn strip_modifiers(phase: &str) -> String {
        phase
            .split(':')
            .filter(|m| {
                !m.starts_with("workers=") && !m.starts_with("round_robin=") && !m.starts_with("files=")
            })
            .collect::<Vec<_>>()
            .join(":")
    }
    strip_table(&mut doc);
    let fix_sweep = |t: &mut toml::Table| {
        strip_table(t);
        let keys: Vec<String> = t.keys().cloned().collect();
        if let Some(toml::Value::Array(groups)) = t.get_mut("zip") {
            let flat = groups.iter().all(|g| g.is_str());
            let mut gs: Vec<Vec<toml::Value>> = if flat {
                vec![groups.clone()]
            } else {
                groups.iter().map(|g| g.as_array().unwrap().clone()).collect()
            };
            for g in &mut gs {
                g.retain(|k| keys.contains(&k.as_str().unwrap().to_string()));
            }
            gs.retain(|g| g.len() >= 2);
            *groups = gs.into_iter().map(toml::Value::Array).collect();
        }
        t.retain(|_, v| !v.as_array().is_some_and(|a| a.is_empty()));
    };
    if let Some(toml::Value::Table(sw)) = doc.get_mut("sweep") {
        fix_sweep(sw);
    }
    let meta = doc.get_mut("preset").unwrap().as_table_mut().unwrap();
    meta.remove("needs");
    for scale in ["quick", "paper"] {
        if let Some(toml::Value::Table(over)) = meta.get_mut(scale) {
            strip_table(over);
            if let Some(toml::Value::Table(sw)) = over.get_mut("sweep") {
                fix_sweep(sw);
            }
        }
    }
    // Variables no value uses any more go too.
    let text = toml::to_string(&doc).unwrap();
    let mut doc: toml::Table = text.parse().unwrap();
    let body: String =
        doc.iter().filter(|(k, _)| *k != "sweep" && *k != "preset").map(|(_, v)| v.to_string()).collect();
    let unused = |k: &str| !sweep::is_param(k) && !body.contains(&format!("{{{k}}}"));
    let drop_unused = |t: &mut toml::Table| t.retain(|k, _| k == "zip" || !unused(k));
    if let Some(toml::Value::Table(sw)) = doc.get_mut("sweep") {
        drop_unused(sw);
    }
    for scale in ["quick", "paper"] {
        let sw = doc.get_mut("preset").and_then(|p| p.get_mut(scale)).and_then(|o| o.get_mut("sweep"));
        if let Some(toml::Value::Table(sw)) = sw {
            drop_unused(sw);
        }
    }
    Preset::parse(Box::leak(toml::to_string(&doc).unwrap().into_boxed_str())).unwrap()
}

/// Every preset: valid metadata, every scale's sweep expands, and what this build can resolve
/// resolves. An unavailable preset fails only on a need (MPI) or a capability still being
/// built; with those taken out, the rest of it resolves at every scale.
#[test]
fn every_preset_parses_and_validates_as_far_as_this_build_allows() {
    let s = Scratch::new();
    let env = env(s.path());
    let all = preset::all().unwrap();
    let ids: Vec<&str> = all.iter().map(|p| p.meta.id.as_str()).collect();
    for want in [
        "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9", "R10", "B", "C1", "C2", "C3", "C4", "C5", "C6",
        "C7", "C-fig3", "L1", "L2", "L3", "L4", "IO500",
    ] {
        assert!(ids.contains(&want), "no preset {want}");
    }
    assert!(
        all.iter().filter(|p| p.meta.id.starts_with("B-")).any(|p| p.meta.needs.contains(&"mpi".to_string()))
    );
    for id in ["R7", "R8", "R9", "R10"] {
        assert_eq!(preset::find(id).unwrap().meta.needs, ["io-servers"], "{id} needs I/O-server ranks");
    }
    assert_eq!(preset::find("B-mpi").unwrap().meta.needs, ["mpi"]);
    for p in &all {
        let id = &p.meta.id;
        assert!(!p.meta.title.is_empty() && !p.meta.study.is_empty() && !p.meta.plot.x.is_empty(), "{id}");
        let want_headline = if p.meta.study.starts_with("Russell") {
            "two_sigma_mean"
        } else if p.meta.study.starts_with("Benson") {
            "trimmed_mean_10"
        } else {
            p.meta.headline.as_str()
        };
        assert_eq!(p.meta.headline, want_headline, "{id}");
        let doc: toml::Table = p.text.parse().unwrap();
        for scale in ["quick", "paper"] {
            assert!(doc["preset"].get(scale).is_some(), "{id} has no {scale} scale");
        }
        for scale in SCALES {
            match p.build(scale, &[], &env) {
                Ok(b) => {
                    assert!(p.unmet_needs(scale).is_empty());
                    assert!(!b.points.is_empty());
                    assert_eq!(b.design.preset.as_ref().unwrap().id, *id);
                }
                Err(Error::Spec { field, value, reason }) => {
                    let why = format!("{field} = {value}: {reason}");
                    assert!(
                        field == "preset"
                            && (reason.contains("`mpi` feature") || reason.contains("MPI ranks"))
                            || is_pending(&why),
                        "{id} at {scale:?} fails on something this build should have: {why}"
                    );
                }
                Err(other) => panic!("{id}: {other}"),
            }
            // With the pending parts taken out, the rest resolves (I/O-server presets are all
            // MPI: tests/it/mpi_servers.rs runs them under mpirun).
            if p.meta.needs.iter().any(|n| n == "io-servers") {
                continue;
            }
            let core = core_part(p);
            if let Err(e) = core.build(scale, &[], &env) {
                panic!("{id} at {scale:?}, without its pending parts, does not resolve: {e}\n{}", core.text);
            }
        }
    }
}

/// The sweeps of the studies' grids expand to exactly the paper's point counts.
#[test]
fn preset_grids_have_the_studies_point_counts() {
    let n = |id: &str, scale: Scale| {
        preset::find(id).unwrap().sweep(scale, 24 << 30).unwrap().points().unwrap().len()
    };
    assert_eq!(n("R1", Scale::Paper), 15, "128 MiB..1 GiB in 64 MiB steps");
    assert_eq!(n("R3", Scale::Default), 3 * 8, "3 block sizes x 1..8 processes");
    assert_eq!(n("R4", Scale::Default), 3 * 4 * 8, "block x write interleave x readers");
    assert_eq!(n("R6", Scale::Default), 3 * 4 * 8);
    assert_eq!(n("R7", Scale::Paper), 8 * 8, "1..8 servers (zipped with size) x 1 KiB..128 KiB");
    assert_eq!(n("R8", Scale::Paper), 3 * 10, "TCP with and without no-delay, MPI x 1 KiB..512 KiB");
    assert_eq!(
        n("R10", Scale::Paper),
        4 * 8 * 8,
        "1, 2, 4, 8 servers x 1..8 writers at once (Fig. 26) x 1..8 readers"
    );
    assert_eq!(n("C3", Scale::Default), 5 * 2, "workers zipped with size, x 2 buffers");
    assert_eq!(n("C7", Scale::Default), 3, "options A, B, C");
    assert_eq!(n("L1", Scale::Default), 4, "four write modes");
    assert_eq!(n("L2", Scale::Default), 13 * 3, "16 KiB..64 MiB x three write modes");
    assert_eq!(n("L3", Scale::Paper), 19 * 3, "64 KiB..16 GiB (1x RAM here) x three modes");
    assert_eq!(n("B", Scale::Paper), 5 * 4 * 11, "strategies x compute times x sync sizes");
    assert_eq!(n("B-mmap", Scale::Paper), 5 * 4 * 60, "x 60 (syncsize <= winsize) pairs");
    let sw = preset::find("B-mmap").unwrap().sweep(Scale::Paper, 0).unwrap();
    for p in sw.points().unwrap() {
        let get = |k: &str| iolab::units::parse_size(&p.iter().find(|(a, _)| a == k).unwrap().1, 0).unwrap();
        assert!(get("f") <= get("window"), "syncsize above winsize at {p:?}");
    }
}

/// Every preset available in this build runs to completion at quick scale on real files:
/// every point, phase and repetition complete, with the bytes its spec asks for.
#[test]
fn available_presets_run_at_quick_scale() {
    let s = Scratch::new();
    let env = env(s.path());
    let dir = s.path().to_str().unwrap();
    let mut ran = vec![];
    for p in preset::all().unwrap() {
        if p.check(Scale::Quick, &[dir.to_string()], &env).is_err() {
            continue;
        }
        let id = p.meta.id.clone();
        let t = std::time::Instant::now();
        let out = s.iolab(&["reproduce", &id, "--scale", "quick", "--dir", dir, "--json", "--quiet"]);
        assert!(out.status.success(), "{id}: {}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["design"]["preset"]["id"], id.as_str());
        assert_eq!(doc["design"]["preset"]["scale"], "quick");
        assert_eq!(doc["design"]["headline"], p.meta.headline.as_str());
        for point in doc["points"].as_array().unwrap() {
            let spec: iolab::spec::Spec = serde_json::from_value(point["spec"].clone()).unwrap();
            let plan = iolab::plan::plan(&spec);
            for (ph, planned) in point["phases"].as_array().unwrap().iter().zip(&plan.phases) {
                let r = ph["repetitions"].as_array().unwrap();
                assert_eq!(r.len() as u64, spec.reps as u64, "{id} {}", point["params"]);
                // A metadata phase moves the bytes of its files: create writes them, read-files
                // reads them.
                let md_bytes = match (&spec.md, planned.op) {
                    (Some(md), iolab::spec::OpKind::Create | iolab::spec::OpKind::ReadFiles) => {
                        planned.md_ops() * md.file_bytes
                    }
                    _ => 0,
                };
                for rep in r {
                    assert_eq!(rep["status"], "complete", "{id}");
                    assert_eq!(
                        rep["total_bytes"],
                        planned.bytes() + md_bytes,
                        "{id} {} {}",
                        point["params"],
                        ph["name"]
                    );
                }
            }
        }
        // Every finding is checked, and both its sides were measured at this scale.
        let none = vec![];
        let findings = match doc["findings"].as_array() {
            Some(f) => f,
            None if p.meta.finding.is_empty() => &none,
            None => panic!("{id}: no findings"),
        };
        assert_eq!(findings.len(), p.meta.finding.len(), "{id}");
        for f in findings {
            // A finding without b holds a's own figure to its range.
            for side in ["a", "b"].into_iter().filter(|s| !f[*s].is_null()) {
                assert_eq!(f[side]["n"], spec_reps(&doc), "{id} {side} of `{}`: {}", f["claim"], f[side]);
            }
        }
        // Its time is printed, not asserted: it depends on the machine and its load
        // (`iolab reproduce --list` estimates it, bench/ measures).
        println!("{id}: {:.1} s at quick scale", t.elapsed().as_secs_f64());
        ran.push(id);
        assert!(s.leftovers().iter().all(|f| !f.starts_with(".iolab-")), "{:?}", s.leftovers());
    }
    for id in [
        "R1",
        "R2",
        "R3",
        "R4",
        "R5",
        "R6",
        "B",
        "B-strided",
        "B-mmap",
        "B-strided-mmap",
        "B-proc",
        "C1",
        "C2",
        "C3",
        "C4",
        "C5",
        "C6",
        "C7",
        "L1",
        "L2",
        "L3",
        "L4",
        "IO500",
    ] {
        assert!(ran.contains(&id.to_string()), "{id} should be available in this build; ran {ran:?}");
    }
    eprintln!("ran at quick scale: {ran:?}");
}

/// The repetitions of the experiment's points (the same for every point of a preset).
fn spec_reps(doc: &Value) -> u64 {
    doc["points"][0]["spec"]["reps"].as_u64().unwrap()
}

/// `reproduce --list` lists every preset, with its status computed, and says why.
#[test]
fn reproduce_list_tells_which_presets_run_and_why_not() {
    let s = Scratch::new();
    let env = env(s.path());
    let out = s.iolab(&["reproduce", "--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let text = unwrap_entries(&text);
    for p in preset::all().unwrap() {
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(p.meta.id.as_str())).unwrap();
        match p.check(Scale::Default, &[], &env) {
            // Runnable: available, or too large for this disk (`no space`).
            Ok(_) => assert!(line.contains(" available ") || line.contains(" no space "), "{line}"),
            Err(reason) => {
                assert!(line.contains("unavailable"), "{line}");
                let why = text
                    .lines()
                    .find(|l| l.trim_start().starts_with(&format!("{} ", p.meta.id)) && l.contains(&reason));
                assert!(why.is_some(), "no reason for {}: {reason}\n{text}", p.meta.id);
            }
        }
    }
    assert!(text.contains("needs I/O-server ranks"));
    assert!(text.contains("needs MPI ranks"));
    // Running an unavailable one says why, exit 2.
    let out = s.iolab(&["reproduce", "R7", "--scale", "quick", "--dir", s.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("I/O-server ranks"), "{}", stderr(&out));
    let out = s.iolab(&["reproduce", "B-mpi", "--scale", "quick", "--dir", s.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs MPI ranks"), "{}", stderr(&out));
    let out = s.iolab(&["reproduce", "Z9"]);
    assert_eq!(out.status.code(), Some(2));
    let out = s.iolab(&["reproduce", "R1", "--scale", "huge"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!s.db().exists());
}

/// `--print` gives a file that `iolab run` runs as the same experiment.
#[test]
fn a_printed_preset_runs_as_a_file() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["reproduce", "L1", "--print", "--scale", "quick"]);
    assert!(out.status.success());
    let file = s.path().join("l1.toml");
    std::fs::write(&file, &out.stdout).unwrap();
    let doc = s.run_json(&[file.to_str().unwrap(), "--reps", "1"]);
    let p = preset::find("L1").unwrap();
    let built = p.build(Scale::Quick, &[dir.to_string()], &env(s.path())).unwrap();
    assert_eq!(doc["points"].as_array().unwrap().len(), built.points.len());
    for (got, want) in doc["points"].as_array().unwrap().iter().zip(&built.points) {
        let mut want_spec = serde_json::to_value(&want.spec).unwrap();
        want_spec["reps"] = 1.into();
        assert_eq!(got["spec"], want_spec);
    }
    assert_eq!(doc["design"]["preset"]["id"], "L1");
    assert_eq!(doc["design"]["headline"], "mean");
    // The strategy presets print as files too, with their grid spelled out.
    let out = s.iolab(&["reproduce", "B", "--print", "--scale", "paper"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# B · Benson et al. 2003"), "{text}");
    assert!(text.contains("strategy = [\"S1A\", \"S1B\", \"S2\", \"S3\", \"S5\"]"), "{text}");
    assert!(text.contains("iters = 1024") && text.contains("headline = \"trimmed_mean_10\""), "{text}");
}

/// Memory sizes that are no whole number of blocks: this suite's, a prime just above 10^9,
/// one just below 10 MB (small enough to run C1's default scale for real), and an even 24 GiB.
const ODD_RAM: [u64; 4] = [TEST_RAM_BYTES, 1_000_000_007, 10_000_019, 24 << 30];

/// Every point of every preset at every scale resolves with any memory size: a size relative
/// to memory is rounded down to whole blocks (and stripe units where striped), never refused.
#[test]
fn presets_resolve_with_any_memory_size() {
    let s = Scratch::new();
    for ram in ODD_RAM {
        let env = ResolveEnv { ram_bytes: ram, cwd: s.path().to_path_buf() };
        let mut relative = 0;
        for p in preset::all().unwrap() {
            if !p.unmet_needs(Scale::Quick).is_empty() {
                continue;
            }
            for scale in SCALES {
                let b = p
                    .build(scale, &[], &env)
                    .unwrap_or_else(|e| panic!("{} at {scale:?} with {ram} B of memory: {e}", p.meta.id));
                for point in &b.points {
                    let spec = &point.spec;
                    let unit = spec.stripe_unit_bytes.filter(|_| spec.layout.striped()).unwrap_or(1);
                    assert_eq!(spec.size_bytes % spec.bs_bytes, 0, "{} {:?} {ram}", p.meta.id, point.params);
                    assert_eq!(spec.size_bytes % unit, 0, "{} {:?} {ram}", p.meta.id, point.params);
                    if let Some(v) = point.params.get("size").filter(|v| v.contains("xRAM")) {
                        relative += 1;
                        // Rounded down by less than one block (or stripe unit).
                        let exact = iolab::units::parse_size(v, ram).unwrap();
                        let step = spec.bs_bytes.max(unit);
                        assert!(spec.size_bytes <= exact && exact - spec.size_bytes < step, "{v}: {spec:?}");
                    }
                }
            }
        }
        assert!(relative >= 2 + 15, "C1's two sizes and R1's fifteen at least: {relative}");
    }
}

/// `reproduce --list` with memory sizes that are no whole number of blocks: every preset this
/// build can run is available, and the list says which sizes it rounded.
#[test]
fn reproduce_list_is_the_same_with_any_memory_size() {
    let s = Scratch::new();
    for ram in ODD_RAM {
        let out = s.iolab_env(&["reproduce", "--list"], &[("IOLAB_RAM_BYTES", &ram.to_string())]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = unwrap_entries(&String::from_utf8(out.stdout).unwrap());
        for p in preset::all().unwrap() {
            let line =
                text.lines().find(|l| l.split_whitespace().next() == Some(p.meta.id.as_str())).unwrap();
            let runs = line.contains(" available ") || line.contains(" no space ");
            assert_eq!(runs, p.unmet_needs(Scale::Default).is_empty(), "{ram} B: {line}\n{text}");
        }
        // C1's default sizes are 0.25 and 2 times memory in 4 KiB blocks.
        let c1 = |f: u64, d: u64| ram as u128 * f as u128 / d as u128 % 4096 != 0;
        let notes: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("C1 ")).collect();
        let want = [("0.25xRAM", c1(1, 4)), ("2xRAM", c1(2, 1))];
        for (size, rounded) in want {
            let note = notes.iter().find(|l| l.contains(&format!("size {size} = ")));
            assert_eq!(note.is_some(), rounded, "{ram} B, {size}: {notes:?}");
            if let Some(n) = note {
                let exact = iolab::units::parse_size(size, ram).unwrap();
                assert!(n.contains(&format!("rounded down to {} bytes", exact / 4096 * 4096)), "{n}");
                assert!(n.contains("whole 4 KiB blocks"), "{n}");
            }
        }
    }
}

/// C1 at its default scale, relative to a memory of 10,000,019 bytes: the plan says how each
/// size was rounded, and the run writes and reads exactly those whole blocks.
#[test]
fn a_preset_sized_by_memory_runs_in_whole_blocks() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let ram = [("IOLAB_RAM_BYTES", "10000019")];
    let want = [(10_000_019u64 / 4 / 4096 * 4096, "0.25xRAM"), (2 * 10_000_019u64 / 4096 * 4096, "2xRAM")];
    assert_eq!(want.map(|w| w.0), [2_498_560, 19_996_672]);
    let out = s.iolab_env(&["reproduce", "C1", "--print", "--scale", "default"], &ram);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = s.path().join("c1.toml");
    std::fs::write(&file, &out.stdout).unwrap();
    let out = s.iolab_env(&["plan", file.to_str().unwrap(), "--dir", dir, "--json"], &ram);
    assert!(out.status.success(), "{}", stderr(&out));
    for (bytes, size) in want {
        let note = format!("note: size {size} = ");
        let line = stderr(&out).lines().find(|l| l.starts_with(&note)).map(String::from);
        let line = line.unwrap_or_else(|| panic!("no note for {size}: {}", stderr(&out)));
        assert!(line.contains(&format!("rounded down to {bytes} bytes")), "{line}");
    }
    let out = s.iolab_env(
        &["reproduce", "C1", "--scale", "default", "--dir", dir, "--set", "reps=1", "--json", "--quiet"],
        &ram,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (point, (bytes, size)) in points.iter().zip(want) {
        assert_eq!(point["params"]["size"], size);
        assert_eq!(point["spec"]["size_bytes"], bytes);
        for ph in point["phases"].as_array().unwrap() {
            assert_eq!(ph["repetitions"][0]["status"], "complete", "{}", ph["name"]);
            assert_eq!(ph["repetitions"][0]["total_bytes"], bytes, "{}", ph["name"]);
        }
    }
    assert_eq!(doc["host"]["mem_bytes"], 10_000_019u64);
}

/// French et al. preallocated every output file of their Section 4 ("all output files are
/// preallocated for the tests discussed below"): C1, C2, C3 and C7 preallocate at every scale;
/// C6 alone compares with and without.
#[test]
fn french_presets_preallocate_as_the_study_did() {
    let s = Scratch::new();
    for id in ["C1", "C2", "C3", "C7", "C-fig3", "C6"] {
        let p = preset::find(id).unwrap();
        for scale in SCALES {
            let b = p.build(scale, &[], &env(s.path())).unwrap();
            let with: Vec<bool> = b.points.iter().map(|pt| pt.spec.prealloc).collect();
            if id == "C6" {
                assert!(with.contains(&true) && with.contains(&false), "{id} at {scale:?}: {with:?}");
            } else {
                assert!(with.iter().all(|w| *w), "{id} at {scale:?} writes a file not preallocated");
            }
        }
    }
}

/// R10 (Fig. 26): every client writes as much as every other at every point of every scale,
/// as the study's clients each wrote their own parallel file: in each point's plan the write
/// phase's clients write the same bytes each, and every file the read phase reads was written.
#[test]
fn r10s_clients_write_equal_loads_at_every_point() {
    let s = Scratch::new();
    let p = preset::find("R10").unwrap();
    for scale in SCALES {
        // Without its server ranks (MPI's), on a stripe over directories: which client writes
        // which file, and how much, is the same.
        let mut exp = p.experiment(scale, &[], TEST_RAM_BYTES).unwrap();
        exp.sweep.axes.retain(|a| a.key != "servers");
        exp.sweep.zip.retain(|g| !g.contains(&"servers".to_string()));
        let built = exp.build(&env(s.path())).unwrap();
        for point in &built.points {
            let plan = iolab::plan::plan(&point.spec);
            let (write, read) = (&plan.phases[0], &plan.phases[1]);
            let bytes: Vec<u64> = write.workers.iter().map(|w| w.ops.n_blocks * w.ops.bs).collect();
            let at = format!("{scale:?} {:?}", point.params);
            assert!(bytes.iter().all(|&b| b == bytes[0] && b > 0), "{at}: the clients write {bytes:?} bytes");
            let written: Vec<u32> = write.workers.iter().flat_map(|w| w.files.clone()).collect();
            for r in &read.workers {
                assert!(
                    r.files.iter().all(|f| written.contains(f)),
                    "{at}: {} reads files not written",
                    r.worker
                );
            }
            // The files read back: one per reading client.
            assert_eq!(read.workers.len() as u64, point.params["c"].parse::<u64>().unwrap(), "{at}");
        }
    }
}

/// S2DT and S3DT send strided data as an MPI derived datatype; on contiguous data they are S2
/// and S3, and Benson et al. have them only for strided data (Table 2). Every preset point that
/// runs one of them has strided memory (`mem_len` below `mem_stride`), at every scale. (A build
/// without MPI resolves no MPI preset: the points are read from the sweep.)
#[test]
fn derived_datatype_strategies_run_only_on_strided_data() {
    let mut seen = 0;
    for p in preset::all().unwrap() {
        for scale in SCALES {
            let exp = p.experiment(scale, &[], TEST_RAM_BYTES).unwrap();
            for point in exp.sweep.points().unwrap() {
                let value = |key: &str| {
                    point
                        .iter()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.clone())
                        .or_else(|| exp.params.0.get(key).and_then(|v| v.first().cloned()))
                };
                let Some(strategy) = value("strategy").filter(|s| s == "S2DT" || s == "S3DT") else {
                    continue;
                };
                seen += 1;
                let bytes =
                    |key: &str| value(key).map(|v| iolab::units::parse_size(&v, TEST_RAM_BYTES).unwrap());
                let (len, stride) = (bytes("mem_len"), bytes("mem_stride"));
                assert!(
                    len.zip(stride).is_some_and(|(l, s)| l < s),
                    "{} at {scale:?}: {strategy} on contiguous data (mem_len {len:?}, mem_stride {stride:?}; {point:?})",
                    p.meta.id
                );
            }
        }
    }
    assert!(seen > 0, "B-mpi-strided and B-mpi-strided-mmap run S2DT and S3DT");
}
