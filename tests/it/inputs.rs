//! Streams around a command: a reader that closes iolab's stdout ends the command quietly.

use std::process::Stdio;

use crate::util::*;

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
