//! Presets at a scale: `reproduce --list --scale` shows each preset's sizes, disk space and
//! estimated time for the memory given; `iolab plan` estimates the time from the rates of
//! earlier runs in the store; a preset larger than the disk is refused before anything is
//! written; and every preset printed at quick scale runs as a file with only `--dir`.

use iolab::experiment::ResolveEnv;
use iolab::experiment::estimate::{self, Rates, fmt_about};
use iolab::experiment::preset::{self, Scale};
use iolab::units::fmt_size;

use crate::rig;
use crate::skip;
use crate::util::*;

/// The line of the list table that starts with `id`.
fn line_of<'a>(text: &'a str, id: &str) -> &'a str {
    text.lines().find(|l| l.split_whitespace().next() == Some(id)).unwrap_or_else(|| panic!("{id}: {text}"))
}

#[test]
fn reproduce_list_shows_each_presets_sizes_space_and_time_at_a_scale() {
    let s = Scratch::new();
    let env = ResolveEnv { ram_bytes: 1 << 30, cwd: s.path().to_path_buf() };
    for scale in [Scale::Quick, Scale::Default, Scale::Paper] {
        let out = s.iolab(&["reproduce", "--list", "--scale", scale.name(), "--ram", "1GiB"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with(&format!("scale {}, memory 1 GiB\n", scale.name())), "{text}");
        let mut shown = 0;
        for p in preset::all().unwrap() {
            let line = line_of(&text, &p.meta.id);
            let Ok(built) = p.check(scale, &[], &env) else {
                assert!(line.contains(" unavailable "), "{line}");
                continue;
            };
            assert!(line.contains(" available ") || line.contains(" no space "), "{line}");
            // The sizes of the points that move data (a metadata point's size is unused).
            let data = built.points.iter().filter(|p| p.spec.phases.iter().any(|ph| !ph.op.is_metadata()));
            let mut sizes: Vec<u64> = data.map(|p| p.spec.size_bytes).collect();
            sizes.sort_unstable();
            sizes.dedup();
            let (lo, hi) = (fmt_size(sizes[0]), fmt_size(*sizes.last().unwrap()));
            assert!(line.contains(&lo) && line.contains(&hi), "{lo}, {hi}: {line}");
            let e = estimate::estimate(&built.points, &Rates::none());
            assert!(line.contains(&format!(" {} ", e.disk_text())), "{}: {line}", e.disk_text());
            assert!(line.contains(&e.time_cell()), "{}: {line}", e.time_cell());
            assert!(e.assumed > 0 && line.trim_end().ends_with(" assumed"), "nothing stored: {line}");
            shown += 1;
        }
        assert!(shown >= 20, "{text}");
        assert!(text.contains("else `assumed` at 200 MB/s"), "{text}");
    }
    // R1 at paper scale for 1 GiB of memory: 2x..16x memory in steps of 1x, as the study's
    // 128 MiB..1 GiB on 64 MiB; the largest point sets the space.
    let out = s.iolab(&["reproduce", "--list", "--scale", "paper", "--ram", "1GiB"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let r1 = line_of(&text, "R1");
    assert!(r1.contains("2 GiB..16 GiB (15 sizes)") && r1.contains(" 16 GiB "), "{r1}");
    let out = s.iolab(&["reproduce", "--list", "--scale", "quick", "--ram", "1GiB"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(line_of(&text, "R1").contains("4 MiB, 8 MiB"), "{text}");
    assert!(!s.db().exists(), "listing creates no store");
}

/// `iolab plan` times each phase at the assumed rate when the store has nothing like it, and
/// at the rate this host measured in earlier runs of the same engine, op and size class.
#[test]
fn plan_estimates_the_time_from_the_rates_of_earlier_runs() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan", "--dir", dir, "--size", "4MiB", "--op", "write,read", "--reps", "3"];
        args.extend_from_slice(extra);
        let out = s.iolab(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().find(|l| l.starts_with("estimate for ")).unwrap().to_string()
    };
    let assumed = 3.0 * 2.0 * (4u64 << 20) as f64 / estimate::ASSUMED_BYTES_PER_S;
    assert_eq!(
        plan(&[]),
        format!(
            "estimate for 3 runs (1 point): disk space 4 MiB at most, time {} at 200 MB/s assumed",
            fmt_about(assumed)
        )
    );
    assert!(!s.db().exists(), "planning creates no store");
    // Two measured runs and a warm-up, which is no sample.
    let doc = s.run_json(&["--size", "4MiB", "--op", "write,read", "--reps", "2", "--warmup", "1"]);
    let mut one = 0.0;
    for ph in doc["points"][0]["phases"].as_array().unwrap() {
        let reps = ph["repetitions"].as_array().unwrap();
        assert_eq!(ph["warmups"].as_array().unwrap().len(), 1);
        let bytes: u64 = reps.iter().map(|r| r["total_bytes"].as_u64().unwrap()).sum();
        let ns: u64 = reps.iter().map(|r| r["time_ns"].as_u64().unwrap()).sum();
        one += (4u64 << 20) as f64 / (bytes as f64 * 1e9 / ns as f64);
    }
    assert_eq!(
        plan(&[]),
        format!(
            "estimate for 3 runs (1 point): disk space 4 MiB at most, time {} (rates measured here in 4 earlier phase runs)",
            fmt_about(one * 3.0)
        )
    );
    // --no-store reads no rates; a 1 GiB phase is another size class.
    assert!(plan(&["--no-store"]).ends_with("at 200 MB/s assumed"));
    let out = s.iolab(&["plan", "--dir", dir, "--size", "1GiB", "--op", "write,read", "--reps", "1"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("disk space 1 GiB at most, time ~11 s at 200 MB/s assumed"), "{text}");
}

/// R1 at paper scale on a 96 MiB tmpfs: refused before anything is written (exit 2), naming
/// the point and the bytes needed and free; the list says `no space` with the same figures,
/// and the quick scale still fits.
#[test]
fn reproduce_refuses_a_preset_larger_than_the_disk_before_writing() {
    if !rig::is_root() {
        skip!("needs root to mount a small tmpfs");
    }
    let s = Scratch::new();
    let m = match rig::tmpfs(&s.path().join("small"), "96m") {
        Ok(m) => m,
        Err(e) => skip!("{e}"),
    };
    let dir = m.path.to_str().unwrap();
    let free = iolab::env::sys::fs_free(&m.path).unwrap().0;
    let out = s.iolab(&["reproduce", "R1", "--scale", "paper", "--dir", dir, "--ram", "16MiB"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    // The first point, 2 x 16 MiB, needs 32 MiB + 5% + 64 MiB: more than 96 MiB.
    let want = format!(
        "error: dirs (at sweep point size=2xRAM) = `{dir}`: not enough free space on the file system holding {dir}: \
         the plan writes 32 MiB there; with the margin of 5% + 64 MiB that is {}, but {} is free",
        fmt_size((32 << 20) + (32 << 20) / 20 + (64 << 20)),
        fmt_size(free)
    );
    assert!(err.contains(&want), "{err}\nwanted: {want}");
    assert!(err.contains("R1 at scale paper: 15 points, disk space 256 MiB at most"), "{err}");
    assert_eq!(std::fs::read_dir(&m.path).unwrap().count(), 0, "nothing written");
    assert!(!s.db().exists(), "no store made");
    let out = s.iolab(&["reproduce", "--list", "--scale", "paper", "--ram", "16MiB", "--dir", dir]);
    let text = unwrap_entries(&String::from_utf8(out.stdout).unwrap());
    assert!(line_of(&text, "R1").contains(" no space "), "{text}");
    let (_, below) = text.split_once("why unavailable:\n").unwrap();
    let why = below.lines().find(|l| l.trim_start().starts_with("R1 ")).unwrap();
    assert!(
        why.contains("at sweep point size=2xRAM") && why.contains("the plan writes 32 MiB there"),
        "{why}"
    );
    let out = s.iolab(&["reproduce", "--list", "--scale", "quick", "--dir", dir]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(line_of(&text, "R1").contains(" available "), "{text}");
    let out = s.iolab(&["reproduce", "R1", "--scale", "quick", "--dir", dir, "--no-store", "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Every preset this build runs, printed at quick scale, runs with `iolab run FILE --dir D`:
/// the same points, the preset and scale recorded, every repetition complete.
#[test]
fn every_printed_preset_runs_as_a_file_with_only_a_dir() {
    let s = Scratch::new();
    let d = s.path().to_str().unwrap();
    let env = ResolveEnv { ram_bytes: TEST_RAM_BYTES, cwd: s.path().to_path_buf() };
    let mut ran = 0;
    for p in preset::all().unwrap() {
        let Ok(built) = p.check(Scale::Quick, &[d.to_string()], &env) else { continue };
        let id = &p.meta.id;
        let out = s.iolab(&["reproduce", id, "--print", "--scale", "quick"]);
        assert!(out.status.success(), "{id}: {}", stderr(&out));
        let file = s.path().join(format!("{id}.toml"));
        std::fs::write(&file, &out.stdout).unwrap();
        let doc = s.run_json(&[file.to_str().unwrap(), "--no-store", "--reps", "1"]);
        assert_eq!(doc["design"]["preset"]["id"], id.as_str());
        assert_eq!(doc["design"]["preset"]["scale"], "quick");
        let points = doc["points"].as_array().unwrap();
        assert_eq!(points.len(), built.points.len(), "{id}");
        for (got, want) in points.iter().zip(&built.points) {
            let mut spec = serde_json::to_value(&want.spec).unwrap();
            spec["reps"] = 1.into();
            assert_eq!(got["spec"], spec, "{id}");
            for ph in got["phases"].as_array().unwrap() {
                assert_eq!(ph["repetitions"][0]["status"], "complete", "{id} {}", ph["name"]);
            }
        }
        ran += 1;
    }
    assert!(ran >= 22, "{ran}");
    assert!(!s.db().exists());
    assert!(s.leftovers().iter().all(|f| !f.starts_with(".iolab-")), "{:?}", s.leftovers());
}
