//! Progress on one host when stderr is not a terminal (a batch job's output file, a pipe): a
//! plain line every `--progress-every`, none with `--quiet` or `--progress-every 0`, and a bad
//! value refused naming the option.

use crate::util::*;

/// A write bounded to 2 s prints a line every 300 ms that names the run, the phase, the bytes,
/// the rate and the time against the bound; the counts grow.
#[test]
fn a_plain_line_every_so_often_when_stderr_is_a_pipe() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let run = |runtime: &str, extra: &[&str]| {
        let mut args = vec!["run", "--op", "write", "--size", "256MiB", "--runtime", runtime, "--reps", "1"];
        args.extend(["--no-store", "--json", "--dir", &dir]);
        args.extend_from_slice(extra);
        s.iolab(&args)
    };
    let o = run("2s", &["--progress-every", "300ms"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("progress: rep 1/1 write: ")).collect();
    assert!(lines.len() >= 3, "{err}");
    assert!(lines.iter().all(|l| l.contains(" MB/s · ") && !l.contains("rank")), "{err}");
    assert!(lines[0].ends_with(" of 2.0 s") || lines[0].contains("finishing"), "{err}");
    let sizes: Vec<f64> = lines.iter().map(|l| size_of(l[25..].split(" · ").next().unwrap())).collect();
    assert!(sizes.windows(2).all(|w| w[1] >= w[0]) && sizes.last() > sizes.first(), "{err}");
    for quiet in [&["--progress-every", "100ms", "--quiet"][..], &["--progress-every", "0"]] {
        let o = run("700ms", quiet);
        assert!(o.status.success() && !stderr(&o).contains("progress:"), "{quiet:?}: {}", stderr(&o));
    }
    let o = run("2s", &["--progress-every", "often"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("progress-every = `often`"), "{}", stderr(&o));
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}
