//! The studies' findings: every preset of the four studies declares some, naming only its own
//! sweep axes (the IO500 workload set is a benchmark, not a study: it has none); a
//! reproduced preset ends with a Findings section, and the JSON and the HTML report carry the
//! same verdicts, each consistent with its interval.

use iolab::experiment::preset::{self, Scale};

use crate::util::*;

#[test]
fn every_preset_declares_findings_on_its_own_axes() {
    for p in preset::all().unwrap() {
        let id = &p.meta.id;
        let study = ["Russell", "Benson", "French", "Tirumala"].iter().any(|s| p.meta.study.starts_with(s));
        assert!(!study || !p.meta.finding.is_empty(), "{id} declares no finding");
        let axes: Vec<String> = [Scale::Quick, Scale::Default, Scale::Paper]
            .iter()
            .flat_map(|s| p.sweep(*s, TEST_RAM_BYTES).unwrap().axes)
            .map(|a| a.key)
            .collect();
        for f in &p.meta.finding {
            assert!(f.check().is_ok(), "{id}: {:?}", f.check());
            for k in f.keys() {
                assert!(axes.contains(&k), "{id}: `{k}` of `{}` is no axis ({axes:?})", f.claim);
            }
        }
    }
}

/// The verdict the rule gives an interval, as docs/experiments.md states it.
fn verdict_of(f: &Value) -> &'static str {
    let Some([lo, hi]) = f["interval"].as_array().map(|v| [v[0].as_f64(), v[1].as_f64()]) else {
        return "inconclusive";
    };
    let (lo, hi) = (lo.unwrap(), hi.unwrap_or(f64::INFINITY));
    let min = f["rule"].as_str().unwrap();
    let (emin, emax) = parse_rule(min);
    if lo >= emin && hi <= emax {
        "holds"
    } else if hi < emin || lo > emax {
        "does_not_hold"
    } else {
        "inconclusive"
    }
}

/// `0.9 <= a / b <= 1.1`, `a / b >= 2`, `a / b <= 0.5` as (min, max).
fn parse_rule(rule: &str) -> (f64, f64) {
    let nums: Vec<f64> = rule.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    if rule.contains(">=") {
        (nums[0], f64::INFINITY)
    } else if nums.len() == 2 {
        (nums[0], nums[1])
    } else {
        (f64::NEG_INFINITY, nums[0])
    }
}

#[test]
fn reproduce_ends_with_findings_in_text_json_and_html() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["reproduce", "C5", "--scale", "quick", "--dir", dir, "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text.find("\nFindings (").unwrap_or_else(|| panic!("no Findings section:\n{text}"));
    let section = &text[at..];
    let c5 = preset::find("C5").unwrap();
    assert_eq!(c5.meta.finding.len(), 2);
    for f in &c5.meta.finding {
        let i = section.find(&f.claim).unwrap_or_else(|| panic!("no `{}` in\n{section}", f.claim));
        let rest = &section[i..];
        assert!(rest.contains(&format!("paper: {}", f.paper)), "{rest}");
        assert!(rest.contains("here:  a / b = "), "{rest}");
        let verdict = rest.lines().find(|l| l.trim_start().starts_with("verdict: ")).unwrap();
        assert!(
            ["holds", "does not hold", "inconclusive"]
                .iter()
                .any(|v| verdict.contains(&format!("verdict: {v} ("))),
            "{verdict}"
        );
    }

    let out = s.iolab(&["results", "show", "last", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2);
    let phases = doc["points"][0]["phases"].as_array().unwrap();
    let rates = |name: &str| -> Vec<f64> {
        let ph = phases.iter().find(|p| p["name"] == name).unwrap();
        ph["repetitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["max_sar_bytes_per_s"].as_f64().unwrap())
            .collect()
    };
    for (f, spec) in findings.iter().zip(&c5.meta.finding) {
        assert_eq!(f["claim"], spec.claim.as_str());
        assert_eq!(f["paper"], spec.paper.as_str());
        assert_eq!(f["paired"], true, "one point: both sides come from the same runs");
        // The measured ratio is the mean of the runs' own ratios, from the stored rates.
        let (a, b) = (rates(f["a"]["phase"].as_str().unwrap()), rates(f["b"]["phase"].as_str().unwrap()));
        assert_eq!((a.len(), b.len()), (2, 2));
        let want = (a[0] / b[0] + a[1] / b[1]) / 2.0;
        let got = f["ratio"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
        assert_eq!(f["a"]["n"], 2);
        assert_eq!(f["a"]["ci95"].as_array().unwrap().len(), 2);
        assert_eq!(f["verdict"], verdict_of(f), "{f}");
    }

    let out = s.iolab(&["report", "--last"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = String::from_utf8(out.stdout).unwrap();
    let at = html.find("<section id=\"findings\">").expect("a findings section");
    for (f, spec) in findings.iter().zip(&c5.meta.finding) {
        let row = html[at..].find(&spec.claim).expect("each claim in the page");
        let verdict = f["verdict"].as_str().unwrap().replace('_', " ");
        assert!(html[at + row..].contains(&format!("<td>{verdict} (rule ")), "{verdict}");
        // The row's class is the verdict (styled by it).
        let tr = html[..at + row].rfind("<tr class=\"").expect("the claim's row");
        let class = format!("<tr class=\"{}\">", verdict.replace(' ', "-"));
        assert!(html[tr..].starts_with(&class), "{}", &html[tr..at + row]);
    }
}

#[test]
fn an_experiment_without_a_preset_has_no_findings() {
    let s = Scratch::new();
    let doc = s.run_json(&["--op", "write", "--size", "1MiB", "--bs", "64KiB", "--reps", "2"]);
    assert!(doc.get("findings").is_none(), "{}", doc["findings"]);
    let out = s.iolab(&["results", "show", "last"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\nFindings ("));
}

#[test]
fn a_strategy_preset_ends_with_its_findings_too() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap();
    let out = s.iolab(&["reproduce", "B", "--scale", "quick", "--dir", dir, "--quiet", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text.find("\nFindings (").unwrap_or_else(|| panic!("no Findings section:\n{text}"));
    // Each claim as printed, wrapped to the width.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let section = words(&text[at..]);
    for f in &preset::find("B").unwrap().meta.finding {
        assert!(section.contains(&words(&f.claim)), "{}\n{text}", f.claim);
    }
}

/// The studies' full texts: `shared/seeds/` beside the project (../shared/seeds from the
/// repository, or beside any of its parent directories, as a worktree sits deeper), or
/// IOLAB_SEEDS. None where this checkout has no copy.
fn seeds_dir() -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("IOLAB_SEEDS") {
        return Some(d.into());
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    root.ancestors().skip(1).map(|a| a.join("shared/seeds")).find(|d| d.is_dir())
}

/// Runs of whitespace (spaces, tabs, line breaks) as one space.
fn normalised(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The quoted passages of `presets` not found word for word in their study's text, and how
/// many were checked.
fn misquotes(texts: &[(String, String)], presets: &[preset::Preset]) -> (Vec<String>, usize) {
    let (mut bad, mut checked) = (vec![], 0);
    for p in presets {
        let author = p.meta.study.split_whitespace().next().unwrap_or_default();
        let Some((_, text)) = texts.iter().find(|(a, _)| a == author) else { continue };
        for f in &p.meta.finding {
            for piece in f.quote.pieces() {
                let q = normalised(piece);
                if !text.contains(&q) {
                    bad.push(format!(
                        "{}: `{}` quotes words not in {author}'s text: {q}",
                        p.meta.id, f.claim
                    ));
                }
                checked += 1;
            }
        }
    }
    (bad, checked)
}

#[test]
fn every_finding_quotes_its_study_word_for_word() {
    let Some(dir) = seeds_dir() else {
        // A clone without the studies' texts beside it cannot check the quotes: say so.
        let why = "SKIPPED: no shared/seeds beside the repository (set IOLAB_SEEDS to check the quotes)";
        println!("{why}");
        eprintln!("{why}");
        return;
    };
    // Each study's text, known by its first author's name near its start.
    let mut texts: Vec<(String, String)> = vec![];
    for e in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let head: String = text.chars().take(3000).collect();
        for author in ["Russell", "Benson", "French", "Tirumala"] {
            if head.contains(author) {
                texts.push((author.to_string(), normalised(&text)));
            }
        }
    }
    assert_eq!(texts.len(), 4, "the four studies in {}", dir.display());
    let mut presets = preset::all().unwrap();
    let (bad, checked) = misquotes(&texts, &presets);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(checked >= 40, "{checked} quoted passages");
    // One word changed (R1's "tapers off smoothly" made "stays flat") is caught.
    let r1 = presets.iter_mut().find(|p| p.meta.id == "R1").unwrap();
    r1.meta.finding[0].quote = iolab::results::findings::Quote::One(
        "As the file size increases (in multiples of 64 MB), the rate stays flat to only 5.2 MBps".into(),
    );
    let (bad, _) = misquotes(&texts, &presets);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("R1: "), "{bad:?}");
}

/// The seeds' texts, each with the first author named near its start.
fn study_text(author: &str) -> Option<String> {
    let dir = seeds_dir()?;
    std::fs::read_dir(&dir).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).find(|t| {
        let head: String = t.chars().take(3000).collect();
        head.contains(author)
    })
}

/// L1's and L4's findings give the study's figures as the median over the hosts of Tirumala
/// et al.'s Read/Write throughput table (`plain / commit at end (2 GB): median 4.77, at least
/// 2 on 20 of 24 hosts`): each is recomputed from the table in the seed, the median to the
/// digits given, the hosts counted exactly.
#[test]
fn tirumala_medians_are_the_tables() {
    let Some(text) = study_text("Tirumala") else {
        let why = "SKIPPED: no shared/seeds beside the repository (set IOLAB_SEEDS to check the table)";
        println!("{why}");
        eprintln!("{why}");
        return;
    };
    // Columns after the host, OS, CPU and file system: first read, second read, write plain,
    // commit each write, commit at end, commit at end (large file).
    let rows: Vec<[f64; 6]> = text
        .lines()
        .map(str::split_whitespace)
        .map(|w| w.collect::<Vec<_>>())
        .filter(|w| w.len() >= 10 && w[0].starts_with("node"))
        .map(|w| std::array::from_fn(|i| w[4 + i].split('(').next().unwrap().parse::<f64>().unwrap()))
        .collect();
    assert_eq!(rows.len(), 25, "the table's 25 hosts");
    let (first, second, plain, each, end, large) = (0, 1, 2, 3, 4, 5);
    // (the paper string's start, numerator, denominator, the hosts counted as the rule's).
    type Figure<'a> = (&'a str, usize, usize, &'a dyn Fn(f64) -> bool);
    let figures: [Figure; 3] = [
        ("write plain (64 MB) / commit at end (2 GB): median ", plain, large, &|r| r >= 2.0),
        ("commit each write / commit at end (128 KB blocks, 64 MB): median ", each, end, &|r| r <= 0.5),
        ("second / first read: median ", second, first, &|r| r >= 2.0),
    ];
    for id in ["L1", "L4"] {
        let p = preset::find(id).unwrap();
        for (start, num, den, counted) in figures {
            let f = p
                .meta
                .finding
                .iter()
                .find(|f| f.paper.starts_with(start))
                .unwrap_or_else(|| panic!("{id}: {start}"));
            // A host without the large file's figure (sox.i2.edu: 0.00) has no ratio.
            let mut ratios: Vec<f64> =
                rows.iter().filter(|r| r[den] > 0.0).map(|r| r[num] / r[den]).collect();
            ratios.sort_by(f64::total_cmp);
            let n = ratios.len();
            let median = if n % 2 == 1 { ratios[n / 2] } else { (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0 };
            let rest = &f.paper[start.len()..];
            let stated = rest.split(',').next().unwrap();
            let digits = stated.split('.').nth(1).map_or(0, str::len);
            assert_eq!(
                stated,
                format!("{median:.digits$}"),
                "{id}: `{}`: the table's median is {median}",
                f.paper
            );
            let hosts = format!("on {} of {n} hosts", ratios.iter().filter(|&&r| counted(r)).count());
            assert!(rest.contains(&hosts), "{id}: `{}`: the table gives {hosts}", f.paper);
        }
    }
}

/// What a study's figure says of a ratio, and so the range its finding tests.
#[derive(Clone, Copy, Debug)]
enum Effect {
    /// A drop to `r`: the ratio within a factor of 2 (r / 2) up to at least half the drop
    /// (1 - (1 - r) / 2), which excludes no effect.
    Drop,
    /// A factor `r`: r / 2 ..= 2 r.
    Factor,
    /// No clear difference: 0.9..=1.1.
    Alike,
}

/// Where a study reports the size of an effect, its finding tests a range derived from the
/// study's own figure (not only its direction): each rule's bounds are the ones the figures
/// give, and contain the study's ratio.
#[test]
fn findings_test_the_size_of_the_studys_effect() {
    // (preset, finding, the study's figures a and b as the paper line gives them, the effect).
    let table: &[(&str, usize, &str, &str, Effect)] = &[
        ("R4", 0, "3.5", "6.0", Effect::Drop),
        ("R6", 0, "3.0", "6.3", Effect::Drop),
        // Fig. 6's curves over the write interleave are virtually identical; Fig. 10's one
        // file written 2-way reads at 11% of one written sequentially.
        ("R4", 1, "1", "1", Effect::Alike),
        ("R6", 1, "0.7", "6.3", Effect::Drop),
        // Fig. 27's sharp drop is that of agents sharing one disk, Fig. 7's (R4's).
        ("R10", 0, "3.5", "6.0", Effect::Drop),
        ("C-fig3", 2, "1.5", "30", Effect::Factor),
        // Fig. 4: four writers share about 3000 KB/s, each a half of one writer's 1500 (four
        // workers first: with 16 first the rule could fail only at 16 times one's aggregate).
        ("C3", 0, "750", "1500", Effect::Drop),
        // Table 2, 2 s of compute: S3DT's lead over S1A is in the mmap() half, not writev()'s.
        ("B-mpi-strided", 1, "9.75", "9.82", Effect::Alike),
        ("B-mpi-strided-mmap", 0, "7.98", "9.20", Effect::Drop),
    ];
    for &(id, i, a, b, effect) in table {
        let p = preset::find(id).unwrap();
        let f = &p.meta.finding[i];
        for fig in [a, b] {
            assert!(f.paper.contains(fig), "{id}: `{}` gives no {fig}", f.paper);
        }
        let r = a.parse::<f64>().unwrap() / b.parse::<f64>().unwrap();
        let (lo, hi) = match effect {
            Effect::Drop => (r / 2.0, 1.0 - (1.0 - r) / 2.0),
            Effect::Factor => (r / 2.0, 2.0 * r),
            Effect::Alike => (0.9, 1.1),
        };
        let (min, max) = (f.min_ratio, f.max_ratio);
        let near = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() <= 0.005);
        assert!(
            near(min, lo) && near(max, hi),
            "{id}: `{}` tests {min:?}..{max:?}; the study's {r:.3} ({effect:?}) gives {lo:.3}..{hi:.3}",
            f.claim
        );
        assert!(min.unwrap() <= r && r <= max.unwrap(), "{id}: {r} outside its own rule");
    }
}
