//! mdtest's command line (`iolab mdtest -n 1000 -u -F -w 3901 -e 3901 -N 1 -Y`) translated into
//! one iolab experiment: its items per rank, trees (`-u`, `-z`, `-b`, `-I`), the bytes of each
//! file, the shift of its look-ups (`-N`), its phases (`-C`, `-T`, `-E`, `-r`; directories with
//! `-D`, files with `-F`, both as two points when neither), its sync after each phase (`-Y`) and
//! its stonewall (`-W`) as iolab's metadata phases. What iolab cannot do as mdtest does is
//! refused by name.

use crate::error::{Error, Result};
use crate::experiment::sweep::Axis;

use super::Translation;
use super::args::{self, Given, Opt, both, flag, long, val};

/// The options of mdtest that iolab reads (the others are refused as unknown).
pub const OPTIONS: &[Opt] = &[
    val('a', "API: POSIX"),
    val('n', "items (files or directories) per task"),
    val('I', "items per directory of the tree"),
    val('z', "depth of the tree (0)"),
    val('b', "branching factor of the tree (1)"),
    flag('u', "a tree per task (else one shared)"),
    val('d', "the test directory (dir1@dir2: several)"),
    flag('F', "files only"),
    flag('D', "directories only"),
    flag('C', "create only"),
    flag('T', "stat only"),
    flag('E', "read only"),
    flag('r', "remove only"),
    flag('U', "rename directories too (with -D)"),
    val('w', "bytes written into each file"),
    val('e', "bytes read from each file (= -w)"),
    val('N', "stride between tasks for stat and read (0)"),
    val('i', "iterations (1)"),
    flag('L', "items at the leaves only (a tree of depth 0 only)"),
    val('W', "stonewall: seconds of creating, then every task to the same count"),
    flag('Y', "sync after each phase, inside its time"),
    flag('y', "fsync each file after writing it (with -C alone)"),
    val('G', "the data's seed"),
    both('X', "verify-read", false, "verify the data read (iolab always does)"),
    flag('t', "time the unique directories' overhead (without -u: nothing to time)"),
    flag('P', "print rate and time (--format mdtest prints the rate table)"),
    val('p', "seconds of delay before each iteration"),
    flag('v', "verbose (iolab's output is the same)"),
    val('V', "verbosity (iolab's output is the same)"),
    flag('g', "global directory layout (refused)"),
    flag('S', "shared file (refused)"),
    flag('c', "collective creates (refused)"),
    flag('k', "mknod (refused)"),
    flag('R', "random stat order (refused)"),
    val('x', "stonewall status file (refused)"),
    val('B', "no barriers (refused)"),
    flag('Z', "print time instead of rate (refused)"),
    val('f', "first task count (refused)"),
    val('l', "last task count (refused)"),
    val('s', "task count stride (refused)"),
    long("dataPacketType", true, "(refused: iolab writes its own data)"),
];

const FIELD: &str = "mdtest option";

/// Why an option mdtest has is refused, with the nearest iolab option.
fn refused(name: &str) -> Option<&'static str> {
    Some(match name {
        "-S" => {
            "shared-file access is not built for the metadata phases; iolab run --layout shared moves data through one file"
        }
        "-c" => "collective creates (task 0 creating for all) are not built",
        "-g" => "directory striping layouts are not built (iolab's trees take the file system's default)",
        "-k" => "mknod items are not built (files or directories)",
        "-R" => "iolab's stat visits each task's items in order; a random order is not built",
        "-x" => {
            "the stonewall status file splits phases over runs; iolab runs them in one experiment: leave -x out"
        }
        "-B" => "iolab's tasks always meet at a barrier before each phase",
        "-Z" => "--format mdtest prints the rate table; iolab's own table shows both rates and times",
        "-f" | "-l" | "-s" => "iolab runs on every rank of mpirun; sweep the ranks with one run per count",
        "--dataPacketType" => {
            "iolab writes its own data (stamped, checked on read); mdtest's data packets are not built"
        }
        _ => return None,
    })
}

/// mdtest's parameters as given, with its defaults.
#[derive(Debug, Default)]
struct Md {
    items: Option<u64>,
    per_dir: Option<u64>,
    depth: u64,
    fanout: Option<u64>,
    unique: bool,
    dirs: Option<String>,
    files_only: bool,
    dirs_only: bool,
    create: bool,
    stat: bool,
    read: bool,
    remove: bool,
    rename: bool,
    write_bytes: u64,
    read_bytes: Option<u64>,
    stride: u64,
    reps: u64,
    leaf: bool,
    stonewall: u64,
    sync_after: bool,
    sync_each: bool,
    seed: Option<u64>,
    time_unique: bool,
    delay: u64,
    from: std::collections::BTreeMap<&'static str, Vec<String>>,
}

fn apply(md: &mut Md, g: &Given) -> Result<()> {
    let name = g.name();
    if let Some(why) = refused(&name) {
        return Err(Error::spec(FIELD, &g.words, why));
    }
    let num = || args::number(&format!("{FIELD} {name}"), g.value.as_deref().unwrap_or_default());
    // A flag given a value (`-F=0`, the k of `-n1k`) is on when it is not 0, as mdtest's parser.
    let on = || g.value.as_ref().map_or(Ok(true), |_| num().map(|n| n > 0));
    let key: &'static str = match name.as_str() {
        "-a" => {
            let api = g.value.as_deref().unwrap_or_default();
            if !api.eq_ignore_ascii_case("POSIX") {
                return Err(Error::spec(FIELD, &g.words, format!("API {api} is not built in iolab (POSIX)")));
            }
            ""
        }
        "-n" => {
            md.items = Some(num()?);
            "md_files"
        }
        "-I" => {
            md.per_dir = Some(num()?);
            "md_files"
        }
        "-z" => {
            md.depth = num()?;
            "md_depth"
        }
        "-b" => {
            md.fanout = Some(num()?);
            "md_fanout"
        }
        "-u" => {
            md.unique = on()?;
            "md_dirs"
        }
        "-d" => {
            md.dirs = g.value.clone();
            "dirs"
        }
        "-F" => {
            md.files_only = on()?;
            "ops"
        }
        "-D" => {
            md.dirs_only = on()?;
            "ops"
        }
        "-C" => {
            md.create = on()?;
            "ops"
        }
        "-T" => {
            md.stat = on()?;
            "ops"
        }
        "-E" => {
            md.read = on()?;
            "ops"
        }
        "-r" => {
            md.remove = on()?;
            "ops"
        }
        "-U" => {
            md.rename = on()?;
            "ops"
        }
        "-w" => {
            md.write_bytes = num()?;
            "md_size"
        }
        "-e" => {
            md.read_bytes = Some(num()?);
            "md_size"
        }
        "-N" => {
            md.stride = num()?;
            "md_shift"
        }
        "-i" => {
            md.reps = num()?;
            "reps"
        }
        "-L" => {
            md.leaf = on()?;
            ""
        }
        "-W" => {
            md.stonewall = num()?;
            "stonewall"
        }
        "-Y" => {
            md.sync_after = on()?;
            "sync"
        }
        "-y" => {
            md.sync_each = on()?;
            "sync"
        }
        "-G" => {
            md.seed = Some(num()?);
            "seed"
        }
        "-t" => {
            md.time_unique = on()?;
            ""
        }
        "-p" => {
            md.delay = num()?;
            "settle"
        }
        "-X" | "-P" | "-v" | "-V" => "",
        other => return Err(Error::spec(FIELD, other, "not an option of mdtest that iolab knows")),
    };
    if !key.is_empty() {
        md.from.entry(key).or_default().push(g.words.clone());
    }
    Ok(())
}

/// Translates mdtest's command line (without iolab's own options).
pub fn translate(words: &[String]) -> Result<Translation> {
    let mut md = Md { reps: 1, ..Md::default() };
    let given = args::parse("mdtest", OPTIONS, words)?;
    for g in &given {
        apply(&mut md, g)?;
    }
    let mut t = build(&md, words)?;
    for g in given.iter().filter(|g| g.in_value) {
        t.note(format!("{}, and so does iolab", g.words));
    }
    Ok(t)
}

fn build(md: &Md, words: &[String]) -> Result<Translation> {
    let mut t = Translation::new("mdtest");
    let from = |k: &str, dflt: &str| md.from.get(k).map_or(dflt.to_string(), |w| w.join(" "));
    let bad = |what: &str, why: &str| Err(Error::spec(FIELD, what, why));
    let fanout = md.fanout.unwrap_or(1);
    if md.leaf && md.depth > 0 {
        return bad(
            "-L",
            "items at the leaves only are not built for a tree deeper than its root (-z 0 with -L is the root alone)",
        );
    }
    if md.time_unique && md.unique {
        return bad(
            "-t",
            "iolab makes the trees before the first phase, untimed; timing a unique directory's overhead is not built",
        );
    }
    // mdtest's tree: 1 + b + ... + b^z directories; items spread evenly, rounded down.
    let mut dirs = 1u64;
    let mut level = 1u64;
    for _ in 0..md.depth {
        level = level.saturating_mul(fanout);
        dirs = dirs.saturating_add(level);
    }
    let items = match (md.items, md.per_dir) {
        (None, None) => return bad("-n", "give the items per task (-n) or per directory (-I)"),
        (Some(n), None) => n / dirs * dirs,
        (None, Some(i)) => i.saturating_mul(dirs),
        (Some(n), Some(i)) if n == i.saturating_mul(dirs) => n,
        (Some(n), Some(i)) => {
            return bad(
                &format!("-n {n} -I {i}"),
                &format!(
                    "mdtest then loops over several test directories; iolab builds one: give -n {} (-I x the {dirs} directories) or one of them",
                    i.saturating_mul(dirs)
                ),
            );
        }
    };
    if items == 0 {
        return bad(
            &from("md_files", "-n"),
            &format!("no items: fewer than one per directory of the tree's {dirs}"),
        );
    }
    if let Some(n) = md.items.filter(|&n| n != items && md.per_dir.is_none()) {
        t.note(format!(
            "-n {n}: {items} items per task, {} in each of the tree's {dirs} directories, as mdtest rounds",
            items / dirs
        ));
    }
    t.set("name", format!("mdtest {}", words.join(" ")), "the command line")?;
    t.set(
        "md_calls",
        "mdtest",
        "mdtest's calls: each item by its whole path, `sync` after a phase (--set md_calls=beneath: iolab's)",
    )?;
    t.set("md_files", items, &from("md_files", "-n"))?;
    t.set(
        "md_dirs",
        if md.unique { "unique" } else { "shared" },
        &from("md_dirs", "no -u: one tree for all tasks"),
    )?;
    if md.depth > 0 {
        t.set("md_depth", md.depth, &from("md_depth", "-z"))?;
        t.set("md_fanout", fanout, &from("md_fanout", "-b 1 (mdtest's default)"))?;
    }
    if let Some(e) = md.read_bytes.filter(|&e| e != md.write_bytes) {
        return bad(
            &from("md_size", "-e"),
            &format!("iolab reads back the {} bytes each file holds (-w); -e {e} differs", md.write_bytes),
        );
    }
    if md.write_bytes > 0 {
        t.set("md_size", md.write_bytes, &from("md_size", "-w"))?;
    }
    if md.stride > 0 {
        t.set("md_shift", md.stride, &from("md_shift", "-N"))?;
    }
    // Phases: the ones asked for (all when none), of files, directories or both.
    let all = !(md.create || md.stat || md.read || md.remove);
    let pick = |asked: bool| all || asked;
    let mut file_ops = vec![];
    let mut dir_ops = vec![];
    let create =
        if md.stonewall > 0 { format!("create:stonewall={}s", md.stonewall) } else { "create".into() };
    let mkdir = if md.stonewall > 0 { format!("mkdir:stonewall={}s", md.stonewall) } else { "mkdir".into() };
    if pick(md.create) {
        file_ops.push(create);
        dir_ops.push(mkdir);
    }
    if pick(md.stat) {
        file_ops.push("stat".to_string());
        dir_ops.push("stat".to_string());
    }
    if pick(md.read) {
        file_ops.push("read-files".to_string());
    }
    if md.rename {
        dir_ops.push("rename".to_string());
    }
    if pick(md.remove) {
        file_ops.push("unlink".to_string());
        dir_ops.push("rmdir".to_string());
    }
    if md.rename && md.files_only && !md.dirs_only {
        return bad("-U", "mdtest renames directories: give -D");
    }
    let kinds: Vec<Vec<String>> = match (md.files_only, md.dirs_only) {
        (true, false) => vec![file_ops],
        (false, true) => vec![dir_ops],
        _ => vec![dir_ops, file_ops],
    };
    let kinds: Vec<Vec<String>> = kinds.into_iter().filter(|k| !k.is_empty()).collect();
    if kinds.is_empty() {
        return bad(&from("ops", "-E"), "no phase to run: mdtest reads files only (-E with -D)");
    }
    let ops_from = from("ops", "neither -C, -T, -E nor -r: every phase");
    if kinds.len() == 1 {
        t.set_list("ops", kinds[0].clone(), &ops_from)?;
    } else {
        let values: Vec<String> = kinds.iter().map(|k| k.join(",")).collect();
        t.experiment.sweep.push(Axis { key: "ops".into(), text: values.join(";"), values });
        t.origins
            .insert("sweep ops".into(), format!("{ops_from}; neither -F nor -D: directories, then files"));
        t.note("neither -F nor -D: mdtest tests directories, then files; iolab runs them as two points of one experiment");
    }
    // Commits: -Y syncs after each phase, -y each file.
    match (md.sync_after, md.sync_each) {
        (true, true) => return bad("-y -Y", "iolab commits each item or each phase, not both: give one"),
        (true, false) => t.set("sync", "end", &from("sync", "-Y"))?,
        (false, true) => {
            let others = kinds
                .iter()
                .flatten()
                .any(|o| !o.starts_with("create") && !o.starts_with("stat") && o != "read-files");
            if others {
                return bad(
                    "-y",
                    "iolab's sync = each commits every item of every phase that changes the namespace (a directory fsync after each unlink); mdtest's -y syncs written files only: give -y with -C alone",
                );
            }
            t.set("sync", "each", &from("sync", "-y"))?;
            t.set("sync_call", "fsync", "-y: fsync")?;
        }
        (false, false) => t.set("sync", "none", "no -Y: mdtest commits nothing")?,
    }
    if md.stonewall > 0 {
        t.set(
            "wear_out",
            "true",
            &from("stonewall", "-W: every task then makes as many items as the most any made"),
        )?;
    }
    t.set("reps", md.reps.max(1), &from("reps", "-i 1 (mdtest's default)"))?;
    if let Some(s) = md.seed {
        t.set("seed", s, &from("seed", "-G"))?;
    }
    if md.delay > 0 {
        t.set("settle", format!("{}s", md.delay), &from("settle", "-p"))?;
    }
    match &md.dirs {
        Some(d) => {
            let list: Vec<String> = d.split('@').map(String::from).collect();
            t.set_list("dirs", list, &from("dirs", "-d"))?;
            t.note(format!("-d {d}: iolab works in its own work directory there (.iolab-RUNID/md/), its trees and items named by iolab"));
        }
        None => t.note(
            "no -d: mdtest's default is ./out; iolab works in its own work directory under the current one",
        ),
    }
    if md.stride > 0 && kinds.iter().flatten().any(|o| o == "unlink" || o == "rmdir") {
        t.note("-N: stats and reads visit the items of the task -N further, as mdtest's; each task removes its own items (mdtest's removal is 3 x -N further: the same items, in another task's hands)");
    }
    Ok(t)
}

/// The help of `iolab mdtest --help`.
pub fn help() -> String {
    format!(
        "Run an mdtest command line as an iolab experiment: iolab mdtest [MDTEST OPTIONS] [iolab options]\n\
         (under mpirun as mdtest: mpirun -np 4 iolab mdtest -n 1000 -u -F -w 3901 -e 3901 -N 1 -Y)\n\n\
         mdtest options iolab reads (docs/ior.md has the table; any other is refused):\n{}\n{}",
        args::help_table(OPTIONS),
        super::OWN_HELP
    )
}

#[cfg(test)]
#[path = "mdtest_tests.rs"]
mod tests;
