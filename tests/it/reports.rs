//! `iolab report`: one self-contained HTML page per experiment (and per store of hosts), made
//! from the store, checked as text (sections, figures, embedded data equal to the exports, no
//! external resource) and opened in headless Chromium (screenshot, console, DOM, the layout
//! at 1400 and 800 pixels wide, print); its size stays small as runs add up.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::plots::{groups, of_class};
use crate::util::*;

/// The Chromium binary, if installed (`scripts/test.sh` installs Debian's `chromium`).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs headless Chromium with a fresh profile and no network-facing background work. The
/// profile goes to memory (/dev/shm) where there is one, so the browser's own writes do not
/// show as device I/O in the other tests' runs (which flag such I/O as noise).
fn headless(bin: &Path, scratch: &Path, args: &[&str], page: &Path) -> Output {
    let shm = Path::new("/dev/shm");
    let profile = tempfile::tempdir_in(if shm.is_dir() { shm } else { scratch }).unwrap();
    Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.path().display()),
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap()
}

/// Console messages Chromium logged for the page (`--enable-logging=stderr`).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// The text of a page must not fetch anything: no script, stylesheet link, image source or
/// URL other than the SVG namespace.
pub(crate) fn assert_self_contained(html: &str) {
    for bad in ["<script", "<link", " src=", "url(", "https:", "@import"] {
        assert!(!html.contains(bad), "the page contains {bad}");
    }
    let http: Vec<&str> = html.match_indices("http:").map(|(i, _)| &html[i..i + 26]).collect();
    assert!(http.iter().all(|h| *h == "http://www.w3.org/2000/svg"), "{http:?}");
}

/// The data URI of a download link, decoded.
fn data_uri(html: &str, file_name: &str) -> Vec<u8> {
    let at = html.find(&format!("download=\"{file_name}\"")).unwrap_or_else(|| panic!("no {file_name}"));
    let href = html[at..].split("base64,").nth(1).unwrap().split('"').next().unwrap();
    decode_base64(href)
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    assert!(gz.starts_with(&[0x1f, 0x8b]), "not gzip");
    let mut out = vec![];
    flate2::read::GzDecoder::new(gz).read_to_end(&mut out).unwrap();
    out
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 {c}"),
    };
    let mut out = vec![];
    for chunk in s.as_bytes().chunks(4) {
        let n = chunk.iter().filter(|&&c| c != b'=').count();
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= (if c == b'=' { 0 } else { val(c) as u32 }) << (18 - 6 * i);
        }
        out.extend_from_slice(&acc.to_be_bytes()[1..n]);
    }
    out
}

/// Measures the page's layout in a window `width` pixels wide: a copy of it with a script
/// (the page itself has none) that, once loaded, writes into the DOM the window's inner width,
/// the width of the viewport beside the scroll bar, the document's scroll width, and every
/// element whose box reaches past the viewport's right or left edge. Returns (inner width,
/// viewport width, scroll width, the elements: tag.class, left..right, text).
fn layout_at(bin: &Path, scratch: &Path, page: &Path, width: u32) -> (u32, u32, u32, Vec<String>) {
    const MEASURE: &str = r#"<script>
window.addEventListener('load', () => {
  const w = document.documentElement.clientWidth;
  const out = [window.innerWidth + ' ' + w + ' ' + document.documentElement.scrollWidth];
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > w + 0.5 || r.left < -0.5) {
      const cls = typeof e.className === 'string' ? e.className : '';
      const text = (e.textContent || '').trim().slice(0, 40).replace(/\s+/g, ' ');
      out.push(e.tagName + '.' + cls + ' ' + Math.round(r.left) + '..' + Math.round(r.right) + ' ' + text);
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
});
</script>"#;
    let html = std::fs::read_to_string(page).unwrap();
    let copy = scratch.join(format!("layout-{width}.html"));
    std::fs::write(&copy, html.replacen("</body>", &format!("{MEASURE}</body>"), 1)).unwrap();
    let out = headless(bin, scratch, &[&format!("--window-size={width},1000"), "--dump-dom"], &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let dom = String::from_utf8(out.stdout).unwrap();
    let text = dom
        .split("<pre id=\"layout-check\">")
        .nth(1)
        .expect("the measure ran")
        .split("</pre>")
        .next()
        .unwrap();
    let mut lines = text.lines();
    let nums: Vec<u32> = lines.next().unwrap().split(' ').map(|n| n.parse().unwrap()).collect();
    (nums[0], nums[1], nums[2], lines.map(|l| l.replace("&amp;", "&")).collect())
}

/// Opens a page in Chromium: a screenshot of the expected size that is not blank, no console
/// message, no file loaded but the page, and the DOM with the given sections; at 1400 and at
/// 800 pixels wide nothing reaches past the window's width (no table wider than the page, no
/// sideways scrolling); the page prints to a PDF of several pages. Skips (saying so) where
/// Chromium is not installed.
pub(crate) fn check_in_chromium(scratch: &Path, page: &Path, sections: &[&str], svgs: usize) {
    let Some(bin) = chromium() else {
        eprintln!(
            "SKIP: Chromium is not installed (scripts/test.sh installs Debian's `chromium`); the page was checked as text only"
        );
        return;
    };
    // The layout check can fail: an element wider than the window is caught.
    let planted = scratch.join("wide.html");
    std::fs::write(
        &planted,
        "<html><body><div class=\"planted\" style=\"width:1600px\">x</div></body></html>",
    )
    .unwrap();
    let (_, viewport, scroll, wide) = layout_at(&bin, scratch, &planted, 1400);
    assert!(scroll > viewport && wide.iter().any(|l| l.starts_with("DIV.planted ")), "{scroll} {wide:?}");
    for width in [1400, 800] {
        let (inner, viewport, scroll, wide) = layout_at(&bin, scratch, page, width);
        assert_eq!(inner, width, "the window is {width} px wide");
        assert!(viewport > width * 9 / 10, "the viewport: {viewport} px");
        assert!(wide.is_empty(), "at {width} px, past the viewport's {viewport} px:\n{}", wide.join("\n"));
        assert!(scroll <= viewport, "at {width} px the page scrolls sideways: {scroll} > {viewport}");
    }
    // The console check can fail: a page with an error is caught.
    let bad = scratch.join("bad.html");
    std::fs::write(&bad, "<html><body><script>console.error('planted')</script></body></html>").unwrap();
    let out = headless(&bin, scratch, &["--enable-logging=stderr", "--v=0", "--dump-dom"], &bad);
    assert!(console_lines(&stderr(&out)).iter().any(|l| l.contains("planted")), "{}", stderr(&out));

    let shot = scratch.join("shot.png");
    let out = headless(
        &bin,
        scratch,
        &[&format!("--screenshot={}", shot.display()), "--window-size=1000,1400"],
        page,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let img = image::open(&shot).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (1000, 1400));
    let ink = img.pixels().filter(|p| p.0.iter().any(|&c| c < 200)).count();
    assert!(ink > 1000 * 1400 / 50, "the screenshot is nearly blank: {ink} inked pixels");

    let out = headless(&bin, scratch, &["--enable-logging=stderr", "--v=1", "--dump-dom"], page);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(console_lines(&err), Vec::<&str>::new(), "console messages");
    let page_url = format!("file://{}", page.display());
    for l in err.lines().filter(|l| l.contains("FileURLLoader::Start")) {
        assert!(l.trim_end().ends_with(&page_url), "the page loaded another file: {l}");
    }
    let dom = String::from_utf8(out.stdout).unwrap();
    for id in sections {
        assert!(dom.contains(&format!("<section id=\"{id}\">")), "section {id} missing from the DOM");
    }
    assert_eq!(dom.matches("<svg ").count(), svgs, "every figure is in the DOM");

    let pdf = scratch.join("print.pdf");
    let out = headless(
        &bin,
        scratch,
        &[&format!("--print-to-pdf={}", pdf.display()), "--no-pdf-header-footer"],
        page,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF") && bytes.len() > 20_000, "the page prints: {} bytes", bytes.len());
}

/// A swept, traced experiment: the report has every section, a figure per plot that applies,
/// the raw CSV and JSON equal to `iolab results export`, and nothing external.
#[test]
fn experiment_report() {
    let s = Scratch::new();
    s.run_json(&[
        "--size",
        "512KiB",
        "--bs",
        "16KiB",
        "--op",
        "write,read:cold",
        "--sweep",
        "workers=1,2",
        "--reps",
        "2",
        "--trace",
    ]);
    let page = s.path().join("report.html");
    let out = s.iolab(&["report", "--last", "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_self_contained(&html);
    let sections = ["summary", "plots", "runs", "data", "settings", "spec", "host", "cache"];
    for id in sections {
        assert!(html.contains(&format!("<section id=\"{id}\">")), "{id}");
    }
    // rate (read:cold), rate (write), bars, workers x 2 phases, cdf x 2 points, histogram, trace
    // (and a zoom when a period was found).
    let figures = html.matches("<figure class=\"plot\"").count();
    assert!((9..=10).contains(&figures), "{figures} figures");
    for n in 1..=figures {
        assert!(html.contains(&format!("<b>Figure {n}.</b>")), "figure {n}");
    }
    assert_eq!(html.matches("<svg ").count(), figures);
    // The first figure is the rate plot: one series (workers is x) of two points.
    let first = html.split("<figure class=\"plot\"").nth(1).unwrap();
    let gs = groups(first.split("</svg>").next().unwrap());
    assert_eq!(of_class(&gs, "series").len(), 1);
    assert_eq!(of_class(&gs, "series")[0].markers(), 2);
    // Embedded data, gzip-compressed, equals the exports.
    let id = html.split("<code>iolab report ").nth(1).unwrap().split('<').next().unwrap().to_string();
    let csv = s.iolab(&["results", "export", &id, "--csv"]);
    assert_eq!(gunzip(&data_uri(&html, &format!("{id}.csv.gz"))), csv.stdout);
    let json = s.iolab(&["results", "export", &id, "--json"]);
    assert_eq!(gunzip(&data_uri(&html, &format!("{id}.json.gz"))), json.stdout);
    let traces = s.iolab(&["results", "trace", &id]);
    assert_eq!(gunzip(&data_uri(&html, &format!("{id}-traces.csv.gz"))), traces.stdout);
    // The summary and cache tables name every point and phase.
    for cell in ["<td>workers=1</td>", "<td>workers=2</td>", "<td>read:cold</td>", "<td>cold</td>"] {
        assert!(html.contains(cell), "{cell}");
    }
    // Results first: the summary (with its IOPS and costs as tables), the plots, the runs, the
    // data; the settings folded at the end.
    let at = |id: &str| html.find(&format!("<section id=\"{id}\">")).unwrap();
    let order = ["summary", "plots", "runs", "data", "settings", "spec", "host", "cache"];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "sections out of order");
    let settings = &html[at("settings")..];
    assert!(
        settings.contains("<details>") && settings.find("<details>") < settings.find("<section id=\"spec\">")
    );
    let summary = &html[at("summary")..at("plots")];
    for t in ["<table class=\"summary\">", "<table class=\"iops\">", "<table class=\"costs\">"] {
        assert!(summary.contains(t), "{t}");
    }
    assert!(!summary.contains("<pre>open"), "costs are a table, not terminal text");
    // Every point's latency distribution.
    for p in 0..2 {
        assert!(html.contains(&format!("every phase of point {p} (workers={})", p + 1)), "cdf of point {p}");
    }
    check_in_chromium(s.path(), &page, &sections, figures);
}

/// A host with long facts (a container's overlay mount options, a long device model, a deep
/// target path) still fits a window 1400 and 800 pixels wide: long words break in the host
/// table instead of pushing it past the page.
#[test]
fn long_host_facts_fit_the_window() {
    let s = Scratch::new();
    let mut doc =
        s.run_json(&["--size", "256KiB", "--bs", "64KiB", "--reps", "2", "--op", "write,read:cold"]);
    let t = &mut doc["host"]["targets"][0];
    let layers: Vec<String> = (0..6)
        .map(|i| format!("/var/lib/docker/overlay2/l/{}{i}", "QXJ4N2ZKWDVTR0JBWU5ITVBLRjZPUVk".repeat(2)))
        .collect();
    t["mount_options"] = format!(
        "rw,relatime,lowerdir={},upperdir=/var/lib/docker/overlay2/5c1e0f5f9e2d4b7a8c3f1d2e6b9a0c4d7e8f1a2b3c4d5e6f7a8b9c0d1e2f3a4b/diff,workdir=/var/lib/docker/overlay2/5c1e0f5f9e2d4b7a8c3f1d2e6b9a0c4d7e8f1a2b3c4d5e6f7a8b9c0d1e2f3a4b/work,xino=off,nouserxattr",
        layers.join(":")
    )
    .into();
    t["device_model"] = "SAMSUNG_MZVL21T0HCLR-00BL2_S676NF0R512345_(NVMe,firmware_GXA7601Q)".into();
    let other = Scratch::new();
    let json = other.path().join("long-host.json");
    std::fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = other.iolab(&["results", "import", json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = other.path().join("report.html");
    let out = other.iolab(&["report", "--last", "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("xino=off,nouserxattr"), "the long mount options are on the page");
    let sections = ["spec", "host", "cache", "summary", "plots", "runs", "data"];
    check_in_chromium(other.path(), &page, &sections, html.matches("<svg ").count());
}

/// The page stays small as runs add up: 12 runs of 3 phases and 4 workers make a page of at
/// most 32 KiB plus 16 KiB per run (the raw data gzip-compressed, lean SVG), where the raw JSON
/// alone, pretty-printed and base64-encoded, took about 48 KiB per run; the data is there once.
#[test]
fn the_report_stays_small() {
    let s = Scratch::new();
    let runs = 12;
    let reps = runs.to_string();
    s.run_json(&["--size", "1MiB", "--bs", "64KiB", "--workers", "4", "--reps", &reps]);
    let page = s.path().join("report.html");
    let out = s.iolab(&["report", "--last", "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let bound = (32 << 10) + runs * (16 << 10);
    assert!(html.len() <= bound, "{} bytes for {runs} runs, over {bound}", html.len());
    let json = s.iolab(&["results", "export", "last", "--json"]).stdout;
    assert!(json.len() > bound, "the raw JSON ({} bytes) alone would not fit", json.len());
    assert_eq!(html.matches("base64,").count(), 2, "the CSV and the JSON, once each");
    let id = html.split("<code>iolab report ").nth(1).unwrap().split('<').next().unwrap().to_string();
    assert_eq!(gunzip(&data_uri(&html, &format!("{id}.json.gz"))), json);
}

/// The per-host page: the SLAC table with one row, its graph with a bar per figure, and the
/// table as CSV equal to `iolab results compare --format csv`; the same page from
/// `iolab results compare --format html`.
#[test]
fn compare_report() {
    let s = Scratch::new();
    let dir = s.path().to_str().unwrap().to_string();
    let out = s.iolab(&["reproduce", "L1", "--scale", "quick", "--dir", &dir, "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = s.path().join("hosts.html");
    let out = s.iolab(&["report", "--compare", "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let table = html.split("<table class=\"hosts\">").nth(1).unwrap().split("</table>").next().unwrap();
    assert_eq!(table.matches("<tr>").count(), 2, "a header and one host");
    let gs = groups(&html);
    let series = of_class(&gs, "series");
    assert_eq!(series.len(), 1);
    let figures = table.split("<tbody>").nth(1).unwrap().matches("<td class=\"num\">").count();
    assert_eq!(series[0].count("rect"), figures - table.matches("<td class=\"num\">-</td>").count());
    let csv = s.iolab(&["results", "compare", "--format", "csv"]);
    assert_eq!(data_uri(&html, "hosts.csv"), csv.stdout);
    let via_compare = s.iolab(&["results", "compare", "--format", "html"]);
    let other = String::from_utf8(via_compare.stdout).unwrap();
    // The pages differ only in the time they were made.
    let strip = |h: &str| {
        let (head, rest) = h.split_once("; made ").unwrap();
        head.to_string() + rest.split_once("</p>").unwrap().1
    };
    assert_eq!(strip(&other), strip(&html), "the same page either way");
    check_in_chromium(s.path(), &page, &["hosts", "plots", "data"], 1);
}
