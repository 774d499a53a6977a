//! The command line's spec flags and the docs' parameter table are made from the parameter
//! table: every parameter's flags are in `--help` with its help line, each sets the parameter
//! it belongs to, and docs/spec.md holds exactly the table it makes.

use iolab::cli::{Cli, Command};
use iolab::experiment::{FlagKind, PARAMS, Params, markdown_table};

use crate::util::{Scratch, stderr};

/// The parameters `iolab run ARGS` sets (without reading any file), or clap's error.
fn params_of(args: &[&str]) -> Result<Params, String> {
    let argv = ["iolab", "run"].iter().chain(args);
    match <Cli as clap::Parser>::try_parse_from(argv) {
        Ok(Cli { command: Command::Run(a) }) => a.spec.params().map_err(|e| e.to_string()),
        Ok(other) => panic!("parsed as {other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

fn map(pairs: &[(&str, &[&str])]) -> Params {
    let mut p = Params::default();
    for (k, v) in pairs {
        p.0.insert(k.to_string(), v.iter().map(|s| s.to_string()).collect());
    }
    p
}

#[test]
fn run_and_plan_help_show_every_parameter_flag_with_its_help_line() {
    let s = Scratch::new();
    for cmd in ["run", "plan"] {
        let out = s.iolab(&[cmd, "--help"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let help = String::from_utf8(out.stdout).unwrap();
        let mpi_only = |key: &str| {
            iolab::cli::GROUPS.iter().any(|(h, keys)| *h == iolab::cli::MPI_HEADING && keys.contains(&key))
        };
        for def in PARAMS {
            for f in def.flags {
                let head = match f.kind {
                    FlagKind::Switch(_) => format!("--{} ", f.name),
                    _ => format!("--{} <{}> ", f.name, f.value_name),
                };
                // Left out of a build without MPI (the help says so).
                if mpi_only(def.key) && !iolab::launch::HAS_MPI {
                    assert!(!help.contains(&head), "{cmd} --help shows {head}");
                    continue;
                }
                let mut want = f.help.unwrap_or(def.help).to_string();
                if f.kind == FlagKind::Repeated {
                    want += " (repeatable)";
                }
                if let (None, Some(d)) = (f.help, iolab::cli::shown_default(def)) {
                    want += &format!(" [default: {d}]");
                }
                assert_eq!(flag_help(&help, &head), want, "{cmd} {head}");
            }
        }
        for other in
            ["[SPEC]", "--set <KEY=VALUE>", "--sweep <KEY=VALUES>", "--zip <AXES>", "--json", "--db <PATH>"]
        {
            assert!(help.contains(other), "{cmd} --help lacks {other}");
        }
    }
}

/// The help of the flag whose line starts with `head` (`--size <SIZE> `), its wrapped lines
/// joined.
fn flag_help(help: &str, head: &str) -> String {
    let mut lines = help.lines().skip_while(|l| !l.trim_start().starts_with(head));
    let first = lines.next().unwrap_or_else(|| panic!("--help has no {head}:\n{help}"));
    let rest = lines.take_while(|l| l.starts_with("          ") && !l.trim_start().starts_with('-'));
    let text = first[first.find(head).unwrap() + head.len()..].trim().to_string();
    rest.fold(text, |t, l| if t.is_empty() { l.trim().to_string() } else { t + " " + l.trim() })
}

/// `--layout`'s help names every layout `--layout` accepts, in run and plan alike.
#[test]
fn layout_help_names_every_layout() {
    let s = Scratch::new();
    for cmd in ["run", "plan"] {
        let help = String::from_utf8(s.iolab(&[cmd, "--help"]).stdout).unwrap();
        let line = flag_help(&help, "--layout <LAYOUT> ");
        let line = line.split(" [default").next().unwrap();
        let words: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(words, iolab::spec::Layout::NAMES, "{line}");
        for w in words {
            assert!(params_of(&["--layout", w]).is_ok(), "{w}");
            assert_eq!(iolab::spec::Layout::parse(w).map(|l| l.name()), Some(w));
        }
    }
}

#[test]
fn each_flag_sets_its_parameter() {
    for def in PARAMS {
        for f in def.flags {
            let flag = format!("--{}", f.name);
            let (args, want): (Vec<&str>, Vec<&str>) = match f.kind {
                FlagKind::Value => (vec![&flag, "v"], vec!["v"]),
                FlagKind::Switch(v) => (vec![&flag], vec![v]),
                FlagKind::Repeated => (vec![&flag, "a", &flag, "b"], vec!["a", "b"]),
                FlagKind::Commas => (vec![&flag, "a,b"], vec!["a", "b"]),
            };
            assert_eq!(params_of(&args).unwrap(), map(&[(def.key, &want)]), "{args:?}");
        }
    }
    assert_eq!(params_of(&[]).unwrap(), Params::default());
}

/// Two flags of one parameter that disagree are refused (exit 2 from the binary), naming both;
/// flags that agree are fine; `--set` wins over the flags.
#[test]
fn conflicting_flags_of_a_parameter_are_refused_and_set_wins() {
    let e = params_of(&["--dir", "x", "--targets", "a,b"]).unwrap_err();
    assert!(e.contains("--dir x and --targets a,b both set `dirs`"), "{e}");
    let e = params_of(&["--latency", "off", "--trace"]).unwrap_err();
    assert!(e.contains("--latency off and --trace both set `latency`"), "{e}");
    let p = params_of(&["--latency", "trace", "--trace"]).unwrap();
    assert_eq!(p, map(&[("latency", &["trace"])]));
    let p = params_of(&["--trace", "--set", "bs=4k", "--bs", "8k"]).unwrap();
    assert_eq!(p, map(&[("latency", &["trace"]), ("bs", &["4k"])]));
    let s = Scratch::new();
    for args in [&["run", "--trace", "--latency", "off"][..], &["run", "--no-store", "--db", "x.db"]] {
        let o = s.iolab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--no-store") || stderr(&o).contains("both set"), "{}", stderr(&o));
        assert!(s.leftovers().is_empty() && !s.db().exists(), "{args:?}");
    }
    let p = params_of(&["--set", "targets=a,b", "--set", "op=write,read", "--set", "name=x,y"]).unwrap();
    assert_eq!(p, map(&[("dirs", &["a", "b"]), ("ops", &["write", "read"]), ("name", &["x,y"])]));
}

#[test]
fn numbers_may_start_with_a_dash_and_names_may_not() {
    let p = params_of(&["--workers", "-1", "--seed", "-5", "--comptime", "-1s"]).unwrap();
    assert_eq!(p, map(&[("workers", &["-1"]), ("seed", &["-5"]), ("comptime", &["-1s"])]));
    let e = params_of(&["--layout", "-x"]).unwrap_err();
    assert!(e.contains("unexpected argument '-x'"), "{e}");
    let e = params_of(&["--size", "1", "--size", "2"]).unwrap_err();
    assert!(e.contains("--size <SIZE>") && e.contains("cannot be used multiple times"), "{e}");
    let e = params_of(&["--set", "size"]).unwrap_err();
    assert!(e.contains("set = `size`"), "{e}");
}

/// Through the binary: what clap refuses exits 2 naming the argument, and a bad parameter value
/// exits 2 naming the parameter, before any I/O.
#[test]
fn the_binary_refuses_bad_flags_with_exit_2() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    for (args, names) in [
        (&["plan", "--layout", "-x"][..], "unexpected argument '-x'"),
        (&["plan", "--no-such-flag"][..], "--no-such-flag"),
        (&["plan", "--dir", dir, "--workers", "-1"][..], "workers = `-1`"),
        (&["plan", "--dir", dir, "--set", "bogus=1"][..], "bogus = `1`"),
    ] {
        let out = s.iolab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(names), "{args:?}: {}", stderr(&out));
    }
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// Checks that docs/spec.md holds the table PARAMS makes; with `IOLAB_WRITE_DOCS=1`,
/// first writes it there (in place of the table that starts with the same header).
#[test]
fn docs_spec_md_holds_the_generated_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/spec.md");
    let table = markdown_table();
    if std::env::var_os("IOLAB_WRITE_DOCS").is_some() {
        let docs = std::fs::read_to_string(path).unwrap();
        let header = table.lines().next().unwrap();
        let start = docs.find(header).expect("docs/spec.md has no parameter table");
        let len: usize =
            docs[start..].split_inclusive('\n').take_while(|l| l.starts_with('|')).map(str::len).sum();
        std::fs::write(path, format!("{}{table}{}", &docs[..start], &docs[start + len..])).unwrap();
    }
    let docs = std::fs::read_to_string(path).unwrap();
    assert!(
        docs.contains(&table),
        "docs/spec.md's parameter table is not the one PARAMS makes; rerun this test with IOLAB_WRITE_DOCS=1 to write it"
    );
    for def in PARAMS {
        assert_eq!(table.matches(&format!("\n| `{}` |", def.key)).count(), 1, "{}", def.key);
    }
    // Cells hold no unescaped pipe: every row has the header's four columns.
    for row in table.lines() {
        assert_eq!(row.replace("\\|", "").matches('|').count(), 5, "{row}");
    }
}

/// An experiment file's errors say `FILE:LINE:COL:` and the key's path with its value, and
/// exit 2: a duplicate key, bad syntax, a bad value inside `[[phases]]`, an unknown key.
#[test]
fn experiment_file_errors_name_the_file_line_column_and_key() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    for (name, text, wants) in [
        (
            "dup.toml",
            "bs = \"4KiB\"\nbs = \"8KiB\"\n",
            &["dup.toml:2:1: TOML = `bs = \"8KiB\"`", "duplicate key"][..],
        ),
        ("syntax.toml", "size = \"1MiB\"\nbs = = 4\n", &["syntax.toml:2:6: TOML", "bs = = 4"][..]),
        (
            "cache.toml",
            "[[phases]]\nop = \"read\"\ncache = 7\n",
            &["cache.toml:3:9: phases[1].cache = `7`: expected cold, warm or asis"][..],
        ),
        (
            "second.toml",
            "[[phases]]\nop = \"write\"\n\n[[phases]]\nop = \"read\"\norder = \"sideways\"\n",
            &[
                "second.toml:6:9: phases[2].order = `\"sideways\"`: expected seq, reverse, random, uniform, zipf:THETA, pareto:H, normal:DEV",
            ][..],
        ),
        (
            "unknown.toml",
            "size = \"1MiB\"\nblocksize = \"4k\"\n",
            &["unknown.toml:2:13: blocksize = `4k`"][..],
        ),
    ] {
        let path = s.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = s.iolab(&["plan", path.to_str().unwrap(), "--dir", dir]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        for want in wants {
            assert!(stderr(&out).contains(want), "{name}: wanted {want:?} in {}", stderr(&out));
        }
    }
}

/// `--direct` alone (the README's example) runs write and a cold read: a warm read makes no
/// sense with O_DIRECT, so it is not among the default phases then.
#[test]
fn direct_alone_runs_the_phases_that_make_sense() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = s.iolab(&[
        "run",
        "--direct",
        "--bs",
        "4KiB",
        "--order",
        "random",
        "--json",
        "--size",
        "1MiB",
        "--reps",
        "1",
        "--quiet",
        "--no-store",
        "--dir",
        &dir,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> =
        doc["points"][0]["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["write", "read:cold"]);
    let o = s.iolab(&["run", "--direct", "--op", "write,read:warm", "--size", "1MiB", "--dir", &dir]);
    assert_eq!(o.status.code(), Some(2));
}

/// MPI in a build without the feature: the launcher and the MPI-IO engine say why they are
/// missing (exit 2).
#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_in_a_build_without_it_says_so() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    for (args, want) in [
        (["run", "--launcher", "mpi"], "built without MPI"),
        (["run", "--engine", "mpiio"], "built without MPI"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--dir", &dir]);
        let o = s.iolab(&all);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

/// `--ram SIZE` states the memory to defeat: sizes relative to memory follow it in the plan and
/// the presets' list; a size that is no size, or zero, is refused (exit 2).
#[test]
fn ram_states_the_memory_to_defeat() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let o = s.iolab(&["plan", "--size", "0.5xRAM", "--ram", "1GiB", "--dir", &dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("w0000.dat         512 MiB"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = s.iolab(&["reproduce", "--list", "--ram", "3000000000"]);
    let out = crate::util::unwrap_entries(&String::from_utf8_lossy(&o.stdout));
    assert!(out.contains("size 0.25xRAM = 750000000 bytes (with 2.79 GiB of memory)"), "{out}");
    for bad in ["0", "lots"] {
        let o = s.iolab(&["plan", "--size", "1MiB", "--ram", bad, "--dir", &dir]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains(&format!("ram = `{bad}`")), "{}", stderr(&o));
    }
}

/// The host's CPU count is the machine's, not the affinity of the process (mpirun binds each
/// rank to one core): `iolab info` says the same bound to one CPU as unbound.
#[test]
fn the_cpu_count_is_the_machines_not_the_affinity() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let cpu_line = |o: std::process::Output| -> String {
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).lines().find(|l| l.starts_with("cpu ")).unwrap().to_string()
    };
    let free = cpu_line(s.iolab(&["info", dir]));
    let Ok(bound) = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(crate::util::bin())
        .args(["info", dir])
        .output()
    else {
        eprintln!("skip: no taskset here");
        return;
    };
    assert_eq!(cpu_line(bound), free);
}
