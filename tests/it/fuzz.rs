//! Hostile input: the spec parser (TOML, `--set`, command-line flags, then resolution), the
//! units parser and the work-directory marker parser never panic, whatever they are given.
//! Inputs are drawn from a grammar of near-valid tokens (numbers with every unit, keys,
//! modifiers, separators, huge and negative numbers, paths under /dev) mixed with arbitrary
//! Unicode. CI runs a thousand cases of each; `bench/fuzz.sh` runs millions.

use clap::Parser;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use iolab::experiment::{PARAMS, Params, ResolveEnv, resolve};
use iolab::units::{fmt_size, fmt_size_spec, parse_duration_ns, parse_size};

const WORDS: &[&str] = &[
    "write",
    "read",
    "rewrite",
    "seq",
    "reverse",
    "random",
    "rand",
    "cold",
    "warm",
    "asis",
    "as-is",
    "none",
    "never",
    "end",
    "each",
    "every:",
    "fsync",
    "fdatasync",
    "msync",
    "sync",
    "dsync",
    "o_sync",
    "true",
    "false",
    "yes",
    "on",
    "psync",
    "null",
    "shared",
    "file-per-worker",
    "fpp",
    "-",
    "--",
    ":",
    ",",
    "=",
    "#",
    "#2",
    "/dev/shm",
    "/dev/null",
    "/dev/loop0",
    ".",
    "..",
    "/",
    "/tmp",
    "\0",
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "0",
    "1e9",
    "NaN",
    "inf",
    "4096",
    "1.5GiB",
    "2xRAM",
    "0xRAM",
    "1e400",
    ".iolab-",
    "00ea2058726927ec5f996c985d9502c2",
];

fn word() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[0-9_]{0,24}(\\.[0-9_]{0,22})? ?(k|K|KiB|kiB|Ki|m|M|MiB|Mi|g|G|GiB|t|TiB|kB|KB|MB|GB|TB|xRAM|xram|B|b|s|sec|ms|us|ns|h|min|µs)?",
        3 => prop::sample::select(WORDS).prop_map(String::from),
        1 => any::<String>(),
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

/// One parameter value: a few words joined by separators.
fn value() -> BoxedStrategy<String> {
    prop::collection::vec((word(), prop::sample::select(vec![":", ",", "", " ", "_", ".", "=", "x"])), 1..4)
        .prop_map(|ws| ws.into_iter().map(|(w, s)| format!("{w}{s}")).collect::<String>())
        .boxed()
}

fn key() -> BoxedStrategy<String> {
    let mut keys: Vec<String> = PARAMS.iter().map(|p| p.key.to_string()).collect();
    keys.extend(["dir", "op", "phases", "block-size", "allow-device", "sweep", ""].map(String::from));
    prop_oneof![4 => prop::sample::select(keys), 1 => "\\PC{0,10}"].boxed()
}

fn toml_value() -> BoxedStrategy<toml::Value> {
    let leaf = prop_oneof![
        3 => value().prop_map(toml::Value::String),
        2 => any::<i64>().prop_map(toml::Value::Integer),
        1 => any::<f64>().prop_map(toml::Value::Float),
        1 => any::<bool>().prop_map(toml::Value::Boolean),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(toml::Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| toml::Value::Table(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A TOML document: a real table serialised (maybe with `[[phases]]`), or raw or damaged text.
fn toml_text() -> BoxedStrategy<String> {
    let phase = prop::collection::vec(
        (prop::sample::select(vec!["op", "order", "cache", "workers", "x"]), value()),
        0..4,
    )
    .prop_map(|kv| {
        toml::Value::Table(kv.into_iter().map(|(k, v)| (k.to_string(), toml::Value::String(v))).collect())
    });
    let doc = (
        prop::collection::vec((key(), toml_value()), 0..8),
        prop::option::of(prop::collection::vec(phase, 0..4)),
    )
        .prop_map(|(kv, phases)| {
            let mut t: toml::Table = kv.into_iter().collect();
            if let Some(p) = phases {
                t.insert("phases".into(), toml::Value::Array(p));
            }
            toml::to_string(&t).unwrap_or_default()
        });
    prop_oneof![
        4 => doc.clone(),
        1 => any::<String>(),
        1 => (doc, any::<prop::sample::Index>(), "\\PC{0,3}").prop_map(|(d, i, junk)| {
            let cut = d.char_indices().map(|(i, _)| i).nth(i.index(d.chars().count().max(1))).unwrap_or(0);
            format!("{}{junk}", &d[..cut])
        }),
    ]
    .boxed()
}

fn env(dir: &std::path::Path) -> ResolveEnv {
    ResolveEnv { ram_bytes: 24 << 30, cwd: dir.to_path_buf() }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

fn units(cases: u32) {
    let mut r = runner(cases);
    r.run(&(value(), any::<u64>()), |(s, ram)| {
        let _ = parse_size(&s, ram);
        let _ = parse_duration_ns(&s);
        let _ = iolab::spec::SyncPolicy::parse(&s);
        Ok(())
    })
    .unwrap();
    r.run(&any::<u64>(), |n| {
        let _ = fmt_size(n);
        prop_assert_eq!(parse_size(&fmt_size_spec(n), 0).unwrap(), n);
        Ok(())
    })
    .unwrap();
}

fn toml_specs(cases: u32) {
    let dir = tempfile::tempdir().unwrap();
    let e = env(dir.path());
    runner(cases)
        .run(&toml_text(), |text| {
            if let Ok(p) = Params::from_toml(&text) {
                let _ = resolve(&p, &e);
            }
            Ok(())
        })
        .unwrap();
}

fn set_specs(cases: u32) {
    let dir = tempfile::tempdir().unwrap();
    let e = env(dir.path());
    let pairs = prop::collection::vec((key(), prop::collection::vec(value(), 0..3)), 0..8);
    runner(cases)
        .run(&pairs, |pairs| {
            let mut p = Params::default();
            for (k, v) in pairs {
                let _ = p.set(&k, v);
            }
            let _ = resolve(&p, &e);
            Ok(())
        })
        .unwrap();
}

fn cli_specs(cases: u32) {
    let dir = tempfile::tempdir().unwrap();
    let e = env(dir.path());
    let flag = prop::sample::select(vec![
        "--dir",
        "--op",
        "--size",
        "--bs",
        "--workers",
        "--layout",
        "--order",
        "--seed",
        "--engine",
        "--direct",
        "--sync",
        "--sync-call",
        "--open-sync",
        "--prealloc",
        "--cache",
        "--drop-caches",
        "--reps",
        "--keep",
        "--name",
        "--set",
        "--verify",
        "--allow-device",
        "--reuse",
        "--json",
        "--csv",
        "-q",
        "--db",
        "--no-store",
    ]);
    let args = prop::collection::vec(prop_oneof![2 => flag.prop_map(String::from), 3 => value()], 0..12);
    runner(cases)
        .run(&args, |args| {
            let mut argv = vec!["iolab".to_string(), "run".to_string()];
            argv.extend(args);
            if let Ok(iolab::cli::Cli { command: iolab::cli::Command::Run(mut a) }) =
                iolab::cli::Cli::try_parse_from(&argv)
            {
                // Never read a file the fuzzer named (it could be /dev/zero).
                a.spec.spec = None;
                if let Ok(p) = a.spec.params() {
                    let _ = resolve(&p, &e);
                }
            }
            Ok(())
        })
        .unwrap();
}

fn markers(cases: u32) {
    let lines = prop::collection::vec(
        prop_oneof![
            (key(), value()).prop_map(|(k, v)| format!("{k} = {v}")),
            (prop::sample::select(vec!["file", "written", "pid", "run_id", "bs"]), value())
                .prop_map(|(k, v)| format!("{k} = {v}")),
            "\\PC{0,20}",
        ],
        0..10,
    );
    let text = (any::<bool>(), lines, any::<bool>()).prop_map(|(magic, lines, nl)| {
        let mut t = if magic { format!("{}\n", iolab::target::workdir::MAGIC) } else { String::new() };
        t += &lines.join("\n");
        if nl {
            t.push('\n');
        }
        t
    });
    runner(cases)
        .run(&text, |t| {
            if let Ok(m) = iolab::target::workdir::Marker::parse(&t) {
                for (name, _) in &m.files {
                    prop_assert!(iolab::target::workdir::plain_name(name), "accepted {name:?}");
                }
                prop_assert!(iolab::target::workdir::valid_run_id(&m.run_id));
            }
            Ok(())
        })
        .unwrap();
}

fn all(cases: u32) {
    units(cases);
    toml_specs(cases);
    set_specs(cases);
    cli_specs(cases);
    markers(cases);
}

#[test]
fn parsers_never_panic() {
    all(1000);
}

/// `bench/fuzz.sh`: IOLAB_FUZZ_CASES cases of each target (default one million).
#[test]
#[ignore = "long: run by bench/fuzz.sh"]
fn parsers_never_panic_deep() {
    let n = std::env::var("IOLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    all(n);
}
