//! Strings from a user or a store (an experiment's name, an imported host's name and facts)
//! are shown escaped in text: an escape sequence or a newline never reaches the terminal raw.

use crate::util::*;

/// `--name` with an escape sequence and a newline, and an imported experiment whose host name
/// and CPU model carry others: `results list` and `results show` print them as `\x1b[31m` and
/// `\n`, with no control byte but the line ends in their output.
#[test]
fn names_from_a_user_or_a_store_are_shown_escaped() {
    let s = Scratch::new();
    let doc = s.run_json(&["--size", "64KiB", "--bs", "16KiB", "--reps", "1", "--name", "\x1b[31mred\nline"]);
    let mut other = doc.clone();
    other["experiment_id"] = "20200101-000000-e5c0de".into();
    other["host"]["host_id"] = "e5c0de".into();
    other["host"]["hostname"] = "h\x1b]0;owned\x07ost".into();
    other["host"]["cpu_model"] = "cpu\x1b[2J".into();
    for ph in other["points"][0]["phases"].as_array_mut().unwrap() {
        ph["repetitions"][0]["run_id"] = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee".into();
    }
    let f = s.path().join("other.json");
    std::fs::write(&f, serde_json::to_vec(&other).unwrap()).unwrap();
    let o = s.iolab(&["results", "import", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = doc["experiment_id"].as_str().unwrap();
    for args in [
        vec!["results", "list"],
        vec!["results", "show", id],
        vec!["results", "show", "20200101-000000-e5c0de"],
    ] {
        let o = s.iolab(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = String::from_utf8(o.stdout).unwrap();
        let raw: Vec<char> = out.chars().filter(|c| c.is_control() && *c != '\n').collect();
        assert!(raw.is_empty(), "{args:?}: control characters {raw:?} in\n{out}");
        let want: &[&str] = match args[..] {
            ["results", "list"] => &["\\x1b[31mred\\nline", "h\\x1b]0;owned\\x07ost"],
            [_, _, "20200101-000000-e5c0de"] => &["h\\x1b]0;owned\\x07ost", "cpu\\x1b[2J"],
            _ => &["(\\x1b[31mred\\nline)"],
        };
        for w in want {
            assert!(out.contains(w), "{args:?}: no {w} in\n{out}");
        }
    }
}
