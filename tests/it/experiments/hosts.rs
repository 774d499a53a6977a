//! Results across hosts: importing stores and JSON without duplicates, and the per-host table.

use crate::util::*;

/// Runs the L1 preset at quick scale with its data in `dir` and its store in `s`.
fn l1(s: &Scratch, dir: &std::path::Path) -> Value {
    let d = dir.to_str().unwrap();
    let mut args = vec!["reproduce", "L1", "--scale", "quick", "--dir", d, "--json", "--quiet"];
    // A tmpfs under /dev is a target only when named exactly (iolab refuses /dev otherwise).
    let allow = format!("allow_device={d}");
    if dir.starts_with("/dev") {
        args.extend(["--set", &allow]);
    }
    let out = s.iolab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every row of every table of a store, sorted: equal dumps mean equal stores.
fn dump(db: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut out = vec![];
    for table in ["hosts", "experiments", "runs", "phase_results", "worker_results"] {
        let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let cells: Vec<String> = (0..n)
                    .map(|i| match r.get_ref(i).unwrap() {
                        rusqlite::types::ValueRef::Real(f) => f.to_string(),
                        v => format!("{v:?}"),
                    })
                    .collect();
                Ok(cells.join("|"))
            })
            .unwrap();
        for row in rows {
            let row = row.unwrap();
            // finished_unix_s of a run is when this store received it.
            out.push(format!("{table}: {row}"));
        }
    }
    out.sort();
    out
}

fn run_count(s: &Scratch) -> i64 {
    let conn = rusqlite::Connection::open(s.db()).unwrap();
    conn.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).unwrap()
}

fn import(s: &Scratch, path: &std::path::Path) -> String {
    let out = s.iolab(&["results", "import", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// A second store is merged run by run; importing it again, or its JSON, changes nothing.
#[test]
fn importing_twice_changes_nothing() {
    let (a, b) = (Scratch::new(), Scratch::new());
    l1(&a, a.path());
    let doc_b = l1(&b, b.path());
    let runs_b = run_count(&b);
    assert_eq!(runs_b, 8, "4 points x 2 repetitions");
    let before_b = dump(&b.db());

    let msg = import(&a, &b.db());
    assert!(msg.contains("1 experiment(s), 1 new; 8 run(s) added, 0 already present"), "{msg}");
    assert_eq!(run_count(&a), 16);
    let once = dump(&a.db());
    let msg = import(&a, &b.db());
    assert!(msg.contains("0 new; 0 run(s) added, 8 already present"), "{msg}");
    assert_eq!(dump(&a.db()), once, "a second import changed the store");

    // The same experiment as JSON: nothing new either.
    let json = b.path().join("b.json");
    std::fs::write(&json, serde_json::to_vec(&doc_b).unwrap()).unwrap();
    let msg = import(&a, &json);
    assert!(msg.contains("0 run(s) added, 8 already present"), "{msg}");
    assert_eq!(dump(&a.db()), once);
    assert_eq!(dump(&b.db()), before_b, "the imported store is only read");

    // What came in is what was measured there.
    let id = doc_b["experiment_id"].as_str().unwrap();
    let back: Value = serde_json::from_slice(&a.iolab(&["results", "show", id, "--json"]).stdout).unwrap();
    assert_eq!(back, doc_b);

    // An experiment id already held for another host is refused.
    let mut clash = doc_b.clone();
    clash["host"]["host_id"] = "another-host-id".into();
    std::fs::write(&json, serde_json::to_vec(&clash).unwrap()).unwrap();
    let out = a.iolab(&["results", "import", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(dump(&a.db()), once);
    // Not an iolab file: exit 2, nothing changed.
    std::fs::write(&json, b"{\"hello\": 1}").unwrap();
    assert_eq!(a.iolab(&["results", "import", json.to_str().unwrap()]).status.code(), Some(2));
    assert_eq!(dump(&a.db()), once);
}

/// The SLAC table has one row per host and file system: this host on the scratch file system,
/// this host on /dev/shm (a second store made with another --dir, a tmpfs), and a third
/// machine. There is no third machine here: its row is a real L1 run made here whose JSON host
/// facts are then rewritten to describe another machine, as a merged export from one would.
#[test]
fn compare_has_one_row_per_host_and_file_system() {
    let (a, b, c) = (Scratch::new(), Scratch::new(), Scratch::new());
    l1(&a, a.path());
    let mut want_rows = 2;
    let shm = std::path::Path::new("/dev/shm");
    let shm_dir = if shm.is_dir() { tempfile::tempdir_in(shm).ok() } else { None };
    match &shm_dir {
        Some(d) => {
            l1(&b, d.path());
            import(&a, &b.db());
            want_rows += 1;
        }
        None => eprintln!("skip the second-file-system row: no writable /dev/shm"),
    }
    let mut other = l1(&c, c.path());
    other["host"]["host_id"] = "imported-host-0001".into();
    other["host"]["hostname"] = "imported-host.example".into();
    other["host"]["cpus"] = 8.into();
    other["host"]["cpu_mhz"] = 2396.0.into();
    let json = c.path().join("other.json");
    std::fs::write(&json, serde_json::to_vec(&other).unwrap()).unwrap();
    import(&a, &json);
    // A newer L1 on this host's scratch file system replaces the older one in the table.
    let newest = l1(&a, a.path());

    let text = String::from_utf8(a.iolab(&["results", "compare", "--by", "host"]).stdout).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), want_rows, "{text}");
    assert!(rows.iter().any(|r| r.starts_with("imported-host.example") && r.contains("8*2396")), "{text}");
    assert!(
        text.contains(newest["experiment_id"].as_str().unwrap()),
        "the newest experiment per host: {text}"
    );

    let out = a.iolab(&["results", "compare", "--format", "csv"]);
    let mut rdr = csv::Reader::from_reader(&out.stdout[..]);
    let head: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        head,
        [
            "host",
            "os",
            "cpus",
            "cpu_mhz",
            "file_system",
            "first_read_mb_per_s",
            "second_read_mb_per_s",
            "write_plain_mb_per_s",
            "commit_each_write_mb_per_s",
            "commit_at_end_mb_per_s",
            "commit_at_end_large_mb_per_s",
            "large_file_bytes",
            "statistic",
            "flagged",
            "experiment_id"
        ]
    );
    let recs: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), want_rows);
    let mut keys: Vec<(String, String)> = recs.iter().map(|r| (r[0].to_string(), r[4].to_string())).collect();
    keys.dedup();
    assert_eq!(keys.len(), want_rows, "one row per host and file system");
    for r in &recs {
        for i in 5..11 {
            assert!(r[i].parse::<f64>().unwrap() > 0.0, "column {} of {r:?}", head[i]);
        }
        assert_eq!(&r[11], "16777216", "the large file of L1 at quick scale");
        assert_eq!(&r[12], "mean");
    }
    if shm_dir.is_some() {
        assert!(recs.iter().any(|r| &r[4] == "tmpfs"), "{recs:?}");
    }
    let md = String::from_utf8(a.iolab(&["results", "compare", "--format", "markdown"]).stdout).unwrap();
    assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 2 + want_rows, "{md}");

    // No store, or one without an L1 or L4 experiment, has nothing to compare: exit 2 with
    // what to do.
    let empty = Scratch::new();
    let out = empty.iolab(&["results", "compare"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no store there") && stderr(&out).contains("run an experiment"));
    empty.run_json(&["--op", "write", "--size", "64KiB", "--bs", "64KiB", "--reps", "1"]);
    let out = empty.iolab(&["results", "compare"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("reproduce L1"), "{}", stderr(&out));
}
