//! Files and streams around a command: what iolab reads is a regular file of bounded size
//! (never a device or a FIFO it would wait on forever), and a reader that closes iolab's
//! stdout ends the command quietly.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// Runs `iolab ARGS` in the scratch directory with its address space limited to 2 GiB (so a
/// command that reads without limit fails at once instead of exhausting the machine), and
/// panics if it has not returned within 20 s.
fn run_bounded(s: &Scratch, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut c = command();
    c.args(args).env("IOLAB_DB", s.db()).current_dir(s.path());
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only calls setrlimit, which is
    // async-signal-safe, on a limit struct it owns.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 2 << 30, rlim_max: 2 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = c.spawn().unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("iolab {args:?} did not return within 20 s: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// Spec files and imports that are devices or FIFOs are refused at once, naming the path and
/// what it is (exit 2); nothing is run, stored or created.
#[test]
fn devices_and_fifos_are_refused_as_input() {
    let s = Scratch::new();
    let fifo = s.path().join("fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let dir = s.path().to_str().unwrap();
    let cases: [(&[&str], String); 8] = [
        (
            &["run", "/dev/zero", "--dir", dir],
            "spec file = `/dev/zero`: a character device, not a regular file".into(),
        ),
        (&["plan", "/dev/zero", "--dir", dir], "spec file = `/dev/zero`: a character device".into()),
        (&["run", f, "--dir", dir], format!("spec file = `{f}`: a FIFO (named pipe), not a regular file")),
        (&["plan", dir], format!("spec file = `{dir}`: a directory, not a regular file")),
        (
            &["results", "import", "/dev/zero"],
            "import = `/dev/zero`: a character device, not a regular file".into(),
        ),
        (&["results", "import", f], format!("import = `{f}`: a FIFO (named pipe), not a regular file")),
        (&["results", "list", "--db", f], format!("db = `{f}`: a FIFO (named pipe), not a store")),
        (&["run", "--dir", dir, "--db", f], format!("db = `{f}`: a FIFO (named pipe), not a store")),
    ];
    for (args, want) in cases {
        let out = run_bounded(&s, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(&want), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!s.db().exists(), "{args:?}");
        assert_eq!(s.leftovers(), ["fifo"], "{args:?}");
    }
}

/// A spec file larger than 4 MiB is refused without being read (exit 2, naming the file and
/// the cap); one just under the cap is read.
#[test]
fn spec_files_are_capped() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let big = s.path().join("big.toml");
    // Valid TOML all the way: a comment line repeated past 4 MiB.
    let line = format!("# {}\n", "x".repeat(1021));
    std::fs::write(&big, format!("size = \"64KiB\"\nbs = \"4KiB\"\n{}", line.repeat(4096))).unwrap();
    let len = std::fs::metadata(&big).unwrap().len();
    assert!(len > 4 << 20);
    let out = run_bounded(&s, &["plan", big.to_str().unwrap(), "--dir", dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let want =
        format!("spec file = `{}`: holds 4.00 MiB, more than the 4 MiB a spec file may hold", big.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    // Cut to just under the cap, the same file plans.
    std::fs::write(&big, format!("size = \"64KiB\"\nbs = \"4KiB\"\n{}", line.repeat(4095))).unwrap();
    assert!(std::fs::metadata(&big).unwrap().len() < 4 << 20);
    let out = run_bounded(&s, &["plan", big.to_str().unwrap(), "--dir", dir, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["spec"]["size_bytes"], 65536, "{plan}");
}

/// An import reads a regular file through its size: a whole document imports; an empty one
/// and one cut short are refused naming the file.
#[test]
fn an_import_reads_the_file_through_its_size() {
    let s = Scratch::new();
    let doc = s.run_json(&["--op", "write", "--size", "64KiB", "--bs", "64KiB", "--reps", "1"]);
    let other = Scratch::new();
    let json = other.path().join("exp.json");
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = run_bounded(&other, &["results", "import", json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 new; 1 run(s) added"), "{out:?}");
    for bytes in [&b""[..], &serde_json::to_vec(&doc).unwrap()[..100]] {
        std::fs::write(&json, bytes).unwrap();
        let out = run_bounded(&other, &["results", "import", json.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(&format!("import = `{}`", json.display())), "{}", stderr(&out));
    }
}

/// With stdout a pipe whose reader has gone (`iolab ... | head -1` once head has exited), a
/// command ends quietly: exit 0, nothing on stderr.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let run = ["run", "-q", "--dir", &dir, "--op", "write", "--size", "1MiB", "--bs", "4KiB", "--reps", "1"];
    let out = s.iolab(&[&run[..], &["--trace"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let closed = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = command()
            .args(args)
            .env("IOLAB_DB", s.db())
            .current_dir(s.path())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    };
    closed(&["results", "trace", "last"]);
    closed(&["results", "trace", "last", "--json"]);
    closed(&["results", "list"]);
    closed(&["results", "show", "last", "--json"]);
    closed(&["results", "export", "last", "--csv"]);
    closed(&["reproduce", "--list"]);
    closed(&["engines"]);
    // A run whose report cannot be printed is still stored.
    closed(&run);
    let list = String::from_utf8(s.iolab(&["results", "list"]).stdout).unwrap();
    assert_eq!(list.lines().count(), 3, "a header and two experiments: {list}");
}

/// A directory whose name holds a newline: every line that shows it (the table's target line,
/// the plan) stays one line, the newline shown as `\n`; an error quoting it too.
#[test]
fn paths_with_control_characters_stay_on_one_line() {
    let s = Scratch::new();
    let odd = s.path().join("a\nb\tc");
    std::fs::create_dir(&odd).unwrap();
    let dir = odd.to_str().unwrap();
    let o = s.iolab(&["run", "--dir", dir, "--size", "1MiB", "--reps", "1", "--no-store", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let target = out.lines().find(|l| l.starts_with("target ")).unwrap();
    assert!(target.contains("a\\nb\\tc: "), "{target}");
    let o = s.iolab(&["plan", "--dir", dir, "--size", "1MiB"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().any(|l| l.contains("in ") && l.contains("a\\nb\\tc")), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("b\t") || l.starts_with("b\\tc")), "{out}");
    let missing = s.path().join("no\nsuch");
    let o = s.iolab(&["run", "--dir", missing.to_str().unwrap(), "--size", "1MiB"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("no\\nsuch"), "{}", stderr(&o));
}

/// Kernel pseudo file systems are no place for data: refused by name, exit 2, before the free
/// space check can say "0 B free".
#[test]
fn pseudo_file_systems_are_refused() {
    let s = Scratch::new();
    for (dir, fs) in [("/proc", "proc"), ("/sys/kernel", "sysfs"), ("/sys/fs/cgroup", "sysfs")] {
        if !Path::new(dir).exists() {
            continue;
        }
        let o = s.iolab(&["run", "--dir", dir, "--size", "1MiB"]);
        assert_eq!(o.status.code(), Some(2), "{dir}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("{fs} is a pseudo file system")), "{dir}: {}", stderr(&o));
        assert!(!s.db().exists());
    }
}
