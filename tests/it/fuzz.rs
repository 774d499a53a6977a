//! Hostile input: the spec parser (TOML, `--set`, command-line flags, then resolution), the
//! units parser and the work-directory marker parser never panic, whatever they are given.
//! Inputs are drawn from a grammar of near-valid tokens (numbers with every unit, keys,
//! modifiers, separators, huge and negative numbers, paths under /dev) mixed with arbitrary
//! Unicode; and sizes and counts near 2^64 go through `--set`, spec files and flags to the
//! plan, whose every figure must fit (no product may wrap). CI runs a thousand cases of each;
//! `bench/fuzz.sh` runs millions.

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

/// A number near a power of two up to 2^64 (and just past it), or near 2^k of a unit, or any
/// u64: the sizes and counts whose products once wrapped.
fn huge() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (0u32..=64, prop_oneof![4 => Just(0i128), 1 => -2i128..=2])
            .prop_map(|(k, d)| ((1i128 << k) + d).max(0).to_string()),
        2 => (0u32..=24, prop::sample::select(vec!["TiB", "GiB", "MiB", "KiB", "TB", "k"]), -1i64..=1)
            .prop_map(|(k, u, d)| format!("{}{u}", ((1i64 << k) + d).max(0))),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => Just(u64::MAX.to_string()),
        2 => prop::sample::select(vec!["1", "2", "4", "512", "4096", "64KiB", "1MiB", "4MiB"]).prop_map(String::from),
    ]
    .boxed()
}

/// Parameters whose values multiply together (sizes, counts, repetitions, strides), set to
/// numbers near 2^64, with a layout, an engine and `keep`.
fn huge_params() -> BoxedStrategy<Vec<(String, String)>> {
    let keys = prop::sample::select(vec![
        "size",
        "bs",
        "workers",
        "files",
        "files_per_worker",
        "round_robin",
        "stripe_unit",
        "stripe_count",
        "reps",
        "warmup",
        "mem_len",
        "mem_stride",
        "window",
        "iodepth",
        "prime_memory",
        "iters",
    ]);
    // Always a size, mostly a block and a worker count that resolve, and a few more numbers.
    let small = |v: Vec<&'static str>| prop::sample::select(v).prop_map(String::from);
    let bs = prop_oneof![3 => small(vec!["1", "512", "4096", "64KiB", "1MiB"]), 1 => huge()];
    let workers = prop_oneof![3 => small(vec!["1", "2", "3", "4", "16"]), 1 => huge()];
    let numbers =
        (huge(), bs, workers, prop::collection::vec((keys, huge()), 0..5)).prop_map(|(size, bs, w, kv)| {
            let mut all =
                vec![("size".to_string(), size), ("bs".to_string(), bs), ("workers".to_string(), w)];
            all.extend(kv.into_iter().map(|(k, v)| (k.to_string(), v)));
            all
        });
    let layout = prop::sample::select(vec![
        "file-per-worker",
        "shared",
        "shared-strided",
        "striped",
        "striped-per-worker",
    ]);
    let engine = prop::sample::select(vec!["psync", "vsync", "mmap", "uring", "null"]);
    let sync = prop_oneof![Just("end".to_string()), huge().prop_map(|v| format!("every:{v}"))];
    (
        numbers,
        prop::option::of(layout),
        prop::option::of(engine),
        any::<bool>(),
        prop::option::of(sync),
        1usize..5,
    )
        .prop_map(|(mut kv, layout, engine, keep, sync, dirs)| {
            if let Some(l) = layout {
                kv.push(("layout".into(), l.into()));
            }
            if let Some(e) = engine {
                kv.push(("engine".into(), e.into()));
            }
            if keep {
                kv.push(("keep".into(), "true".into()));
            }
            if let Some(s) = sync {
                kv.push(("sync".into(), s));
            }
            kv.push(("dirs".into(), dirs.to_string()));
            kv
        })
        .boxed()
}

/// What a resolved spec must give whatever its sizes: a plan whose figures fit, a free-space
/// need that did not wrap, and every op inside its file.
fn check_resolved(spec: &iolab::spec::Spec) -> Result<(), TestCaseError> {
    let plan = iolab::plan::plan(spec);
    let disk = plan.files.iter().try_fold(0u64, |n, f| n.checked_add(f.size_bytes));
    prop_assert!(disk.is_some_and(|d| d <= i64::MAX as u64), "plan of {} bytes", plan.disk_bytes());
    prop_assert_eq!(Some(plan.disk_bytes()), spec.data_bytes());
    if let Ok(needs) = iolab::target::preflight::needs(spec, &plan, true) {
        for n in needs {
            prop_assert!(n.want_bytes >= n.need_bytes, "the margin wrapped: {:?}", n);
        }
    }
    for ph in &plan.phases {
        for w in &ph.workers {
            for k in
                [0, w.ops.n_ops / 2, w.ops.n_ops.saturating_sub(1)].into_iter().filter(|&k| k < w.ops.n_ops)
            {
                let op = w.ops.op(k);
                let file = &plan.files[w.files[op.file as usize] as usize];
                prop_assert!(
                    op.offset.checked_add(op.len).is_some_and(|end| end <= file.size_bytes),
                    "{:?} past {:?}",
                    op,
                    file
                );
            }
        }
    }
    Ok(())
}

/// Sizes near 2^64 through `--set`, spec files and command-line flags: resolution refuses or
/// gives a spec whose every figure fits (debug builds panic on any overflow on the way).
fn huge_specs(cases: u32) {
    let dir = tempfile::tempdir().unwrap();
    let e = env(dir.path());
    let d = dir.path().display().to_string();
    let dirs = |n: &str| vec![d.clone(); n.parse().unwrap_or(1)];
    runner(cases)
        .run(&huge_params(), |kv| {
            // --set KEY=VALUE
            let mut p = Params::default();
            for (k, v) in &kv {
                let _ = if k == "dirs" { p.set(k, dirs(v)) } else { p.set(k, vec![v.clone()]) };
            }
            if let Ok(spec) = resolve(&p, &e) {
                check_resolved(&spec)?;
            }
            // A spec file.
            let mut t = toml::Table::new();
            for (k, v) in &kv {
                let value = if k == "dirs" {
                    toml::Value::Array(dirs(v).into_iter().map(toml::Value::String).collect())
                } else {
                    toml::Value::String(v.clone())
                };
                t.insert(k.clone(), value);
            }
            if let Ok(p) = Params::from_toml(&toml::to_string(&t).unwrap()) {
                if let Ok(spec) = resolve(&p, &e) {
                    check_resolved(&spec)?;
                }
            }
            // Command-line flags.
            let mut argv = vec!["iolab".to_string(), "run".to_string()];
            for (k, v) in &kv {
                match k.as_str() {
                    "keep" => argv.push("--keep".into()),
                    "dirs" => argv.extend(dirs(v).into_iter().flat_map(|d| ["--dir".to_string(), d])),
                    _ => argv.extend([format!("--{}", k.replace('_', "-")), v.clone()]),
                }
            }
            if let Ok(iolab::cli::Cli { command: iolab::cli::Command::Run(a) }) =
                iolab::cli::Cli::try_parse_from(&argv)
                && let Ok(p) = a.spec.params()
                && let Ok(spec) = resolve(&p, &e)
            {
                check_resolved(&spec)?;
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
    huge_specs(cases);
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
