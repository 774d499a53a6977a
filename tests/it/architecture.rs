//! The shape of the source tree: the layers of docs/architecture.md, with imports only
//! downward; every module opening with a `//!` line; files kept short.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, bottom first; a module may import from its own layer and the ones below.
/// Keep in step with docs/architecture.md and the `//!` of src/lib.rs.
const LAYERS: &[&[&str]] = &[
    &["error", "units", "stats", "text", "json", "test_alloc"],
    &["spec"],
    &["plan"],
    &["env"],
    &["latency"],
    &["target"],
    &["engine"],
    &["worker"],
    &["strategy"],
    &["launch"],
    &["results"],
    &["store"],
    &["report"],
    &["experiment"],
    &["frontend"],
    &["cmd", "cli"],
];

/// Files allowed past the length limit, each with the reason it stays whole.
const LONG_FILES: &[(&str, &str)] = &[
    (
        "experiment/layout.rs",
        "the parameters of layouts and launching with their overflow checks, one set of rules; a third of it is their tests",
    ),
    (
        "spec/params.rs",
        "one table, every parameter's definition with its help, read whole by the CLI, the docs test and the resolver",
    ),
];

const MAX_LINES: usize = 500;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level module a file belongs to (`None` for lib.rs and main.rs).
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// The code of a file that is not test code: every `#[cfg(test)]` item (a module with its
/// braces, or one line) is cut, and whole test files (`tests.rs`) are skipped. Comments are
/// dropped.
fn non_test_code(file: &Path) -> String {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = String::new();
    let mut rest = &text[..];
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let line_end = after.find('\n').unwrap_or(after.len());
        let next = &after[line_end..];
        let item_line = next.trim_start().lines().next().unwrap_or("");
        if item_line.trim_end().ends_with('{') {
            // Skip the braced item.
            let start = line_end + next.find('{').unwrap();
            let mut depth = 0;
            let mut end = after.len();
            for (k, c) in after[start..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = start + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            rest = &after[end..];
        } else {
            // Skip the attribute and the one item line after it.
            let skip = line_end + 1 + next.trim_start_matches('\n').find('\n').map_or(next.len(), |k| k + 1);
            rest = &after[skip.min(after.len())..];
        }
    }
    out.push_str(rest);
    out.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every top-level module named after `crate::` in `code`, with its line.
fn crate_refs(code: &str) -> Vec<(usize, String)> {
    let mut refs = vec![];
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let name: String =
                        item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    refs.push((n + 1, name));
                }
            } else {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                refs.push((n + 1, name));
            }
        }
    }
    refs.into_iter()
        .map(|(n, m)| (n, if m == "Error" || m == "Result" { "error".to_string() } else { m }))
        .filter(|(_, m)| !m.is_empty())
        .collect()
}

#[test]
fn every_top_level_module_has_a_layer() {
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let mut missing: Vec<String> =
        files.iter().filter_map(|f| top_module(f)).filter(|m| layer_of(m).is_none()).collect();
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "modules with no layer in LAYERS: {missing:?}");
}

#[test]
fn imports_point_only_downward() {
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let mut upward = vec![];
    for f in &files {
        let Some(module) = top_module(f) else { continue };
        let Some(mine) = layer_of(&module) else { continue };
        for (line, target) in crate_refs(&non_test_code(f)) {
            if let Some(theirs) = layer_of(&target)
                && theirs > mine
            {
                let rel = f.strip_prefix(src()).unwrap().display().to_string();
                upward.push(format!("src/{rel}:{line}: {module} imports {target}"));
            }
        }
    }
    assert!(upward.is_empty(), "imports pointing up the layers:\n{}", upward.join("\n"));
}

#[test]
fn the_layer_graph_has_no_cycle() {
    // Follows from imports_point_only_downward except within a layer: two modules of one
    // layer must not import each other.
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let Some(module) = top_module(f) else { continue };
        for (_, target) in crate_refs(&non_test_code(f)) {
            if target != module && layer_of(&target).is_some() {
                edges.entry(module.clone()).or_default().push(target);
            }
        }
    }
    for (a, targets) in &edges {
        for b in targets {
            let back = edges.get(b).is_some_and(|t| t.contains(a));
            assert!(!back, "modules {a} and {b} import each other");
        }
    }
}

/// The files of one directory of src/ that a file there imports: `crate::DIR::NAME`,
/// `super::NAME` and (in mod.rs) `NAME::`, each NAME a file of the directory; any other item of
/// the directory (`crate::DIR::Item`, `super::Item`) is its mod.rs's.
fn sibling_refs(code: &str, dir: &str, files: &[String], is_mod: bool) -> Vec<String> {
    let mut out = vec![];
    let name_at = |rest: &str| -> Vec<String> {
        match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .map(|i| i.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
                .collect(),
            None => vec![rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()],
        }
    };
    let prefix = format!("crate::{dir}::");
    for line in code.lines() {
        let t = line.trim_start();
        if t.starts_with("mod ") || t.starts_with("pub mod ") || t.contains(" mod ") {
            continue;
        }
        for p in [prefix.as_str(), "super::"] {
            if is_mod && p == "super::" {
                continue;
            }
            let mut rest = line;
            while let Some(i) = rest.find(p) {
                rest = &rest[i + p.len()..];
                for n in name_at(rest).into_iter().filter(|n| !n.is_empty() && n != "self") {
                    out.push(if files.contains(&n) { n } else { "mod".to_string() });
                }
            }
        }
        if is_mod {
            for f in files {
                let mut rest = line;
                while let Some(i) = rest.find(&format!("{f}::")) {
                    let before = rest[..i].chars().last();
                    if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                        out.push(f.clone());
                    }
                    rest = &rest[i + f.len() + 2..];
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A cycle in `edges`, as the path that closes it, if there is one.
fn find_cycle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, Vec<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == m).unwrap();
                    let mut c = path[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, edges, &mut state, &mut vec![])
        {
            return Some(c);
        }
    }
    None
}

/// The files of src/launch/ import each other without a cycle, and none imports its mod.rs
/// (which dispatches to them): the shared pieces (the world, the phase order, the replies,
/// host files) sit in files that import none of their users, so a launcher or role reads
/// top-down. Test files are left out.
#[test]
fn launch_files_import_without_a_cycle() {
    let dir = src().join("launch");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "mod" && n != "tests" && !n.ends_with("_tests"))
        .collect();
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut into_mod = vec![];
    for n in names.iter().chain(std::iter::once(&"mod".to_string())) {
        let code = non_test_code(&dir.join(format!("{n}.rs")));
        let refs: Vec<String> =
            sibling_refs(&code, "launch", &names, n == "mod").into_iter().filter(|r| r != n).collect();
        if n != "mod" && refs.iter().any(|r| r == "mod") {
            into_mod.push(n.clone());
        }
        edges.insert(n.clone(), refs);
    }
    assert!(into_mod.is_empty(), "files of src/launch/ that import its mod.rs: {into_mod:?}");
    assert!(edges["mod"].len() > 5, "mod.rs names its launchers: {:?}", edges["mod"]);
    if let Some(c) = find_cycle(&edges) {
        panic!("src/launch/ has an import cycle: {}", c.join(" -> "));
    }
}

/// The cycle check itself: a file importing its mod.rs's item is an edge to mod, a group
/// gives one edge per file named, and a cycle is found with its path.
#[test]
fn the_launch_checker_sees_cycles_and_mod_imports() {
    let files: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    assert_eq!(
        sibling_refs("use crate::launch::{a, Item};\nsuper::c::f();", "launch", &files, false),
        ["a", "c", "mod"]
    );
    assert_eq!(sibling_refs("pub mod a;\nfn f() { b::g(); xb::h(); }", "launch", &files, true), ["b"]);
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    edges.insert("a".into(), vec!["b".into()]);
    edges.insert("b".into(), vec!["c".into()]);
    edges.insert("c".into(), vec![]);
    assert_eq!(find_cycle(&edges), None);
    edges.insert("c".into(), vec!["a".into()]);
    assert_eq!(find_cycle(&edges).unwrap(), ["a", "b", "c", "a"]);
}

#[test]
fn every_module_opens_with_its_job() {
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let bad: Vec<String> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().starts_with("//!"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(bad.is_empty(), "files without a leading `//!` line: {bad:?}");
}

#[test]
fn files_stay_short() {
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let mut long = vec![];
    for f in &files {
        let rel = f.strip_prefix(src()).unwrap().display().to_string();
        let n = std::fs::read_to_string(f).unwrap().lines().count();
        if n > MAX_LINES && !LONG_FILES.iter().any(|(p, _)| *p == rel) {
            long.push(format!("src/{rel}: {n} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them, or list them in LONG_FILES with the reason):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_checker_skips_test_code_only() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m.rs");
    std::fs::write(
        &f,
        "use crate::units;\n#[cfg(test)]\nmod tests;\nuse crate::plan;\n#[cfg(test)]\nmod tests {\n    use crate::cmd;\n    fn f() { if x { } }\n}\nuse crate::stats;\n",
    )
    .unwrap();
    let names: Vec<String> = crate_refs(&non_test_code(&f)).into_iter().map(|(_, m)| m).collect();
    assert_eq!(names, ["units", "plan", "stats"]);
}

#[test]
fn the_checker_sees_upward_imports() {
    // The checker itself: a line naming a higher layer is found, a group is read item by item.
    let refs = crate_refs("use crate::{report::x, units};\nlet a = crate::cmd::run();");
    let names: Vec<&str> = refs.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(names, ["report", "units", "cmd"]);
    assert!(layer_of("cmd") > layer_of("report") && layer_of("report") > layer_of("units"));
}

#[test]
fn docs_architecture_names_every_module() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap();
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let mut missing: Vec<String> = files
        .iter()
        .map(|f| format!("`src/{}`", f.strip_prefix(src()).unwrap().display()))
        .filter(|name| !doc.contains(name.as_str()))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "files docs/architecture.md does not list: {missing:?}");
    for layer in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(doc.contains(layer), "docs/architecture.md does not mention layer {layer}");
    }
}

#[test]
fn docs_name_only_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<PathBuf> = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let mut missing = vec![];
    for d in &docs {
        let text = std::fs::read_to_string(d).unwrap();
        for (i, _) in text.match_indices("src/") {
            let path: String = text[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '/' | '_' | '.' | '-'))
                .collect();
            let path = path.trim_end_matches('.');
            if path.ends_with(".rs") && !path.contains("NAME") && !root.join(path).exists() {
                missing.push(format!("{}: {path}", d.display()));
            }
        }
    }
    assert!(missing.is_empty(), "docs name files that do not exist:\n{}", missing.join("\n"));
}

/// Codecs come from maintained crates (base64, xxhash-rust), not hand-written copies: no
/// source file holds the base64 alphabet or XXH64's primes.
#[test]
fn codecs_come_from_crates() {
    let mut files = vec![];
    rust_files(&src(), &mut files);
    let marks = [
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        "0x9E37_79B1_85EB_CA87",
        "0x9E3779B185EBCA87",
    ];
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            marks.iter().any(|m| text.contains(m))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "hand-written codecs in {found:?}");
}

/// Every test that brings the simulated hosts up is in the nextest group that runs them one at
/// a time (.config/nextest.toml): named with `simulated_hosts`, or in dfs::, mpi_dfs::,
/// slurm:: or cephfs::. One outside it would wait on the hosts' lock in a slot of its own.
#[test]
fn every_test_of_the_simulated_hosts_is_in_their_group() {
    let config =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".config/nextest.toml")).unwrap();
    assert!(
        config
            .contains("filter = 'binary(it) & test(/simulated_hosts|^dfs::|^mpi_dfs::|^slurm::|^cephfs::/)'"),
        "the group's filter is the one this test checks against"
    );
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut files = vec![];
    rust_files(&tests, &mut files);
    let mut found = 0;
    for f in files {
        let module =
            f.strip_prefix(&tests).unwrap().with_extension("").display().to_string().replace('/', "::");
        let mut name = String::new();
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            if let Some(rest) = line.strip_prefix("fn ").or_else(|| line.strip_prefix("pub fn ")) {
                name = rest.split('(').next().unwrap().to_string();
            }
            if line.contains("Hosts::up") && !line.trim_start().starts_with("//") && module != "hosts" {
                found += 1;
                let path = format!("{module}::{name}");
                let grouped = name.contains("simulated_hosts")
                    || ["dfs", "mpi_dfs", "slurm", "cephfs"]
                        .iter()
                        .any(|m| path.starts_with(&format!("{m}::")));
                assert!(grouped, "{path} brings the simulated hosts up outside their nextest group");
            }
        }
    }
    assert!(found >= 10, "the tests of the simulated hosts are found ({found})");
}
