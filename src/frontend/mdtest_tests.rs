//! Tests of mdtest's translation: its phases, trees, bytes, stride and sync as iolab's metadata
//! phases (mdtest's tree and its rounding of items per directory); the options refused by name,
//! letters inside a value among them.

use super::*;
use crate::experiment::{ResolveEnv, resolve};

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn params(cmd: &str) -> crate::experiment::Params {
    translate(&words(cmd)).unwrap().experiment.params
}

#[test]
fn phases_trees_and_bytes_map_to_the_metadata_phases() {
    let p = params("-n 1000 -u -F -w 3901 -e 3901 -N 1 -Y -i 3");
    assert_eq!(p.0["ops"], ["create", "stat", "read-files", "unlink"]);
    assert_eq!(p.one("md_files"), Some("1000"));
    assert_eq!(p.one("md_dirs"), Some("unique"));
    assert_eq!(p.one("md_size"), Some("3901"));
    assert_eq!(p.one("md_shift"), Some("1"));
    assert_eq!(p.one("sync"), Some("end"));
    assert_eq!(p.one("reps"), Some("3"));
    assert_eq!(params("-n 10 -F -C").0["ops"], ["create"]);
    assert_eq!(params("-n 10 -F -T -r").0["ops"], ["stat", "unlink"]);
    assert_eq!(params("-n 10 -D -U").0["ops"], ["mkdir", "stat", "rename", "rmdir"]);
    assert_eq!(params("-n 10 -F -C -W 5").0["ops"], ["create:stonewall=5s"]);
    assert_eq!(params("-n 10 -F").one("sync"), Some("none"));
    assert_eq!(params("-n 10 -F").one("md_dirs"), Some("shared"));
    // mdtest's tree: 1 + 3 + 9 directories, 1000 items rounded down to 76 each.
    let p = params("-n 1000 -z 2 -b 3 -F");
    assert_eq!(p.one("md_files"), Some("988"));
    assert_eq!(params("-I 10 -z 2 -b 3 -F").one("md_files"), Some("130"));
    // Neither -F nor -D: directories, then files, as two points.
    let t = translate(&words("-n 10")).unwrap();
    assert_eq!(t.experiment.sweep.axes[0].values, ["mkdir,stat,rmdir", "create,stat,read-files,unlink"]);
    let env = ResolveEnv { ram_bytes: 1 << 30, cwd: std::env::temp_dir() };
    let built = t.experiment.build(&env).unwrap();
    assert_eq!(built.points.len(), 2);
    let sp = resolve(&params("-n 100 -u -F -w 3901 -e 3901 -z 1 -b 2"), &env).unwrap();
    let md = sp.md.unwrap();
    assert_eq!((md.items, md.depth, md.fanout, md.file_bytes), (99, 1, 2, 3901));
}

#[test]
fn a_flag_given_a_value_is_on_unless_it_is_zero_as_mdtests_parser_reads_it() {
    // -F=0 sets files_only to 0 in mdtest: directories and files, as with neither.
    let t = translate(&words("-n 10 -F=0")).unwrap();
    assert_eq!(t.experiment.sweep.axes[0].values, ["mkdir,stat,rmdir", "create,stat,read-files,unlink"]);
    assert_eq!(params("-n 10 -F=1").0["ops"], ["create", "stat", "read-files", "unlink"]);
    // -n1T: the T of 1T is -T (stat only), given 1T: on.
    let t = translate(&words("-F -C -n1T")).unwrap();
    assert_eq!(t.experiment.params.0["ops"], ["create", "stat"]);
    assert!(t.notes.iter().any(|n| n.contains("the T of -n1T")), "{:?}", t.notes);
}

#[test]
fn what_iolab_cannot_do_as_mdtest_does_is_refused_by_name() {
    for (cmd, names) in [
        ("-n 10 -S", "`-S`"),
        ("-n 10 -R", "`-R`"),
        ("-n 10 -x f", "`-x f`"),
        ("-n 10 -F -w 10 -e 20", "-e 20`"),
        ("-n 10 -F -L -z 1", "`-L`"),
        ("-n 10 -F -y", "`-y`"),
        ("-n 10 -F -y -Y -C", "`-y -Y`"),
        ("-n 10 -a DFS", "`-a DFS`"),
        ("-F", "`-n`"),
        ("-n 10 -I 3", "-n 10 -I 3"),
        ("-n 10 --dataPacketType=t", "--dataPacketType"),
        ("-n 10 -q", "`-q`"),
        ("-n1k -F", "-k (the k of -n1k"),
    ] {
        let e = translate(&words(cmd)).unwrap_err().to_string();
        assert!(e.starts_with("mdtest option") && e.contains(names), "{cmd}: {e}");
    }
}
