//! Output files (`-o`, `--save-spec`): never a store, a file the command reads or a file of a
//! run; another existing file only with `--force`; written whole or not at all; a symbolic
//! link followed like the shell's `>`.

use std::path::Path;

use crate::util::*;

fn hash(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Entries of a directory whose names start with `.iolab-tmp` (temporary outputs).
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".iolab-tmp"))
        .collect()
}

/// The store a command reads, its write-ahead log, another iolab store and a file in a run's
/// work directory are never replaced, `--force` or not; each refusal is exit 2 before
/// anything is written, naming the option and why.
#[test]
fn an_output_never_replaces_a_store_or_a_file_of_a_run() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let doc = s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1", "--keep"]);
    let run_id = doc["points"][0]["phases"][0]["repetitions"][0]["run_id"].as_str().unwrap().to_string();
    let data = work_dir(s.path(), &run_id).join("w0000.dat");
    assert!(data.exists());
    let other = s.path().join("other.db");
    let o = s.iolab(&["results", "import", s.db().to_str().unwrap(), "--db", other.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let db = s.db().to_str().unwrap().to_string();
    let wal = format!("{db}-wal");
    let svg = format!("{db}.svg");
    let keep = [s.db(), other.clone(), data.clone()];
    let before: Vec<Vec<u8>> = keep.iter().map(|p| hash(p)).collect();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["report", "--last", "--db", &db, "-o", &db], "output", "the results store this command reads"),
        (
            vec!["report", "--last", "--db", &db, "-o", &db, "--force"],
            "output",
            "the results store this command reads",
        ),
        (vec!["report", "--last", "--db", &db, "-o", &wal], "output", "the results store this command reads"),
        (
            vec!["report", "--last", "--db", &db, "-o", other.to_str().unwrap(), "--force"],
            "output",
            "an iolab results store",
        ),
        (vec!["plot", "last", "--db", &db, "-o", &svg], "", ""),
        (vec!["results", "export", "last", "--json", "--db", &db, "-o", &db], "output", "the results store"),
        (
            vec!["results", "trace", "last", "--db", &db, "-o", data.to_str().unwrap(), "--force"],
            "output",
            "the work directory of a run",
        ),
        (
            vec!["tune", "checkpoint", "--bytes", "1MiB", "--dir", &dir, "--db", &db, "--save-spec", &db],
            "save_spec",
            "the results store this command reads",
        ),
    ];
    for (args, field, why) in cases {
        if field.is_empty() {
            // A plot beside the store is fine (and not a refusal).
            let o = s.iolab(&args);
            assert!(o.status.success(), "{args:?}: {}", stderr(&o));
            continue;
        }
        let o = s.iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&format!("error: {field} = `")) && e.contains(why), "{args:?}: {e}");
        assert!(e.contains("never"), "{args:?}: {e}");
    }
    let after: Vec<Vec<u8>> = keep.iter().map(|p| hash(p)).collect();
    assert!(before == after, "a store or data file changed");
    assert_eq!(temporaries(s.path()), Vec::<String>::new());
    // The tune refused before it ran: no experiment was added.
    let o = s.iolab(&["results", "list", "--db", &db]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.contains("20")).count(), 1);
}

/// An existing file that is not an earlier output of the same kind needs `--force` (the
/// error says so); an earlier output of the kind, or an empty file, is replaced; a directory,
/// a FIFO and a path under /dev are refused.
#[test]
fn another_file_needs_force_and_an_earlier_output_is_replaced() {
    let s = Scratch::new();
    s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1"]);
    let p = |n: &str| s.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("notes.html"), "my notes\n").unwrap();
    std::fs::write(p("page.svg"), "<svg xmlns=\"http://www.w3.org/2000/svg\"><circle r=\"1\"/></svg>\n")
        .unwrap();
    std::fs::write(p("empty.html"), "").unwrap();
    std::fs::write(p("data.txt"), "1,2,3\n").unwrap();
    for (args, file) in [
        (vec!["report", "--last", "-o", &p("notes.html")], "notes.html"),
        (vec!["plot", "last", "-o", &p("page.svg")], "page.svg"),
        (vec!["results", "export", "last", "--csv", "-o", &p("data.txt")], "data.txt"),
    ] {
        let before = hash(&s.path().join(file));
        let o = s.iolab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("give --force to replace it"), "{args:?}: {}", stderr(&o));
        assert_eq!(hash(&s.path().join(file)), before);
        let mut forced = args.clone();
        forced.push("--force");
        let o = s.iolab(&forced);
        assert!(o.status.success(), "{forced:?}: {}", stderr(&o));
        assert_ne!(hash(&s.path().join(file)), before);
    }
    // Earlier outputs of each kind are replaced without --force; so is an empty file.
    for args in [
        vec!["report", "--last", "-o", &p("notes.html")],
        vec!["report", "--last", "-o", &p("empty.html")],
        vec!["plot", "last", "-o", &p("page.svg")],
        vec!["plot", "last", "-o", &p("p.png")],
        vec!["plot", "last", "-o", &p("p.png")],
        vec!["results", "export", "last", "--json", "-o", &p("e.json")],
        vec!["results", "export", "last", "--json", "-o", &p("e.json")],
    ] {
        let o = s.iolab(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    assert!(hash(&s.path().join("empty.html")).starts_with(b"<!DOCTYPE html>"));
    assert!(hash(&s.path().join("p.png")).starts_with(b"\x89PNG"));
    // An experiment's CSV is not its JSON.
    let o = s.iolab(&["results", "export", "last", "--csv", "-o", &p("e.json")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    std::fs::create_dir(s.path().join("d.html")).unwrap();
    let fifo = s.path().join("f.html");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (target, why) in [
        (p("d.html"), "a directory"),
        (p("f.html"), "a FIFO"),
        ("/dev/null".into(), "under /dev"),
        ("/dev/shm/r.html".into(), "under /dev"),
        ("/proc/self/r.html".into(), "proc"),
    ] {
        let o = s.iolab(&["report", "--last", "-o", &target, "--force"]);
        assert_eq!(o.status.code(), Some(2), "{target}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{target}: {}", stderr(&o));
    }
    assert!(!Path::new("/dev/shm/r.html").exists());
    assert_eq!(temporaries(s.path()), Vec::<String>::new());
}

/// A command that fails after it began leaves no output file (and no temporary one), and the
/// file it would have replaced as it was; `-o` through a symbolic link replaces the file the
/// link leads to, and the link stays.
#[test]
fn an_output_is_whole_or_absent_and_a_link_is_followed() {
    let s = Scratch::new();
    s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1"]);
    let t = s.path().join("t.csv");
    // No traced ops: the trace export fails after the store was read.
    let o = s.iolab(&["results", "trace", "last", "-o", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!t.exists());
    std::fs::write(&t, "run_id,point,rep,phase,worker,op,file\nold\n").unwrap();
    let o = s.iolab(&["results", "trace", "last", "-o", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&t).unwrap(), "run_id,point,rep,phase,worker,op,file\nold\n");
    assert_eq!(temporaries(s.path()), Vec::<String>::new());

    std::fs::create_dir(s.path().join("pages")).unwrap();
    let real = s.path().join("pages/real.html");
    std::os::unix::fs::symlink("pages/real.html", s.path().join("link.html")).unwrap();
    for _ in 0..2 {
        let o = s.iolab(&["report", "--last", "-o", "link.html"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(hash(&real).starts_with(b"<!DOCTYPE html>"));
        assert!(std::fs::symlink_metadata(s.path().join("link.html")).unwrap().file_type().is_symlink());
    }
    // A link that leads to the store is refused like the store.
    std::os::unix::fs::symlink(s.db(), s.path().join("store.html")).unwrap();
    let o = s.iolab(&["report", "--last", "-o", "store.html", "--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the results store this command reads"), "{}", stderr(&o));
    assert_eq!(temporaries(s.path()), Vec::<String>::new());
    assert_eq!(temporaries(&s.path().join("pages")), Vec::<String>::new());
}

/// The default run's table fits a screen: at most 100 columns and 15 lines for the three-phase
/// default experiment, one legend line; `--explain` and `results show --explain` keep the full
/// legend, the rate-over-time and cost tables and the layout; `results export` is JSON unless
/// told `--csv`.
#[test]
fn the_default_table_fits_a_screen_and_explain_keeps_the_rest() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let o = s.iolab(&["run", "--dir", dir, "--size", "4MiB", "--reps", "2", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let brief = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = brief.lines().collect();
    assert!(lines.len() <= 15, "{} lines:\n{brief}", lines.len());
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{brief}");
    for phase in ["write ", "read:cold ", "read:warm "] {
        assert!(lines.iter().any(|l| l.starts_with(phase)), "{phase} in\n{brief}");
    }
    assert!(
        lines.iter().any(|l| l.starts_with("phase ") && l.contains("agg*") && l.contains("95% interval"))
    );
    assert!(!brief.contains("rate over time (") && !brief.contains("open, close, commit:"), "{brief}");
    let words = brief.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("--explain"), "{brief}");
    let full = String::from_utf8(s.iolab(&["results", "show", "last", "--explain"]).stdout).unwrap();
    for kept in [
        "* headline: the mean of agg",
        "max_SAR = sum of the workers' rates",
        "rate over time (",
        "open, close, commit:",
        "file layout after writing",
    ] {
        assert!(full.contains(kept), "{kept:?} not in\n{full}");
    }
    let shown = String::from_utf8(s.iolab(&["results", "show", "last"]).stdout).unwrap();
    assert!(shown.lines().count() <= 15 && shown.lines().all(|l| l.chars().count() <= 100), "{shown}");
    let doc: serde_json::Value =
        serde_json::from_slice(&s.iolab(&["results", "export", "last"]).stdout).expect("JSON by default");
    assert_eq!(doc["points"][0]["phases"].as_array().map(Vec::len), Some(3));
}
