//! HTML reports: one self-contained page (inline CSS and SVG, raw data as data URIs; no
//! script, no network, no external font) that reads well on screen and prints well in black
//! and white. `experiment` is the page of one experiment, `compare` the per-host page.

use crate::error::Result;
use crate::report::plot::{Figure, draw};
use base64::Engine as _;

pub mod compare;
pub mod experiment;
mod settings;
mod strategies;
mod tune;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    draw::xml_escape(s).replace('\'', "&#39;")
}

/// A table; columns listed in `num` are right-aligned numbers. Cells are HTML already.
pub fn table(class: &str, headers: &[&str], rows: &[Vec<String>], num: &[usize]) -> String {
    let mut s = format!("<div class=\"table-wrap\"><table class=\"{class}\">\n<thead><tr>");
    for (i, h) in headers.iter().enumerate() {
        let c = if num.contains(&i) { " class=\"num\"" } else { "" };
        s += &format!("<th{c}>{}</th>", esc(h));
    }
    s += "</tr></thead>\n<tbody>\n";
    for r in rows {
        s += "<tr>";
        for (i, cell) in r.iter().enumerate() {
            let c = if num.contains(&i) { " class=\"num\"" } else { "" };
            s += &format!("<td{c}>{cell}</td>");
        }
        s += "</tr>\n";
    }
    s + "</tbody></table></div>\n"
}

/// A key/value table (cells HTML already).
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut s = String::from("<div class=\"table-wrap\"><table class=\"facts\">\n<tbody>\n");
    for (k, v) in rows {
        s += &format!("<tr><th scope=\"row\">{}</th><td>{v}</td></tr>\n", esc(k));
    }
    s + "</tbody></table></div>\n"
}

/// A figure with its inline SVG, a caption and the command that draws it alone.
pub fn figure(fig: &Figure, number: usize, caption: &str, command: &str) -> Result<String> {
    let svg = draw::svg(fig)?;
    Ok(format!(
        "<figure class=\"plot\" id=\"fig{number}\">\n{svg}<figcaption><b>Figure {number}.</b> {} <span class=\"cmd\">Alone: <code>{}</code></span></figcaption>\n</figure>\n",
        esc(caption),
        esc(command)
    ))
}

/// Gzip (RFC 1952) of `data`, at the best compression.
pub fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(data).and_then(|()| gz.finish()).map_err(|e| crate::error::Error::Run(format!("gzip: {e}")))
}

/// A download link carrying `data` gzip-compressed (`FILE_NAME.gz`), saying both sizes.
pub fn gz_link(file_name: &str, data: &[u8], what: &str) -> Result<String> {
    let gz = gzip(data)?;
    let what = format!("{what}; {} uncompressed", crate::units::fmt_size(data.len() as u64));
    Ok(data_link(&format!("{file_name}.gz"), "application/gzip", &gz, &what))
}

/// A download link carrying its data as a base64 data URI.
pub fn data_link(file_name: &str, mime: &str, data: &[u8], what: &str) -> String {
    format!(
        "<li><a download=\"{}\" href=\"data:{mime};base64,{}\">{}</a> ({}, {})</li>\n",
        esc(file_name),
        base64::engine::general_purpose::STANDARD.encode(data),
        esc(file_name),
        esc(what),
        crate::units::fmt_size(data.len() as u64)
    )
}

/// Seconds since the Unix epoch as a UTC date and time (`2026-11-21 10:51:46 UTC`).
pub fn utc(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

const CSS: &str = r#"
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", Verdana, Arial, sans-serif; color: #111; background: #fff;
  max-width: 1120px; margin: 0 auto; padding: 1.2rem 1.5rem 3rem; line-height: 1.45; font-size: 15px; }
header h1 { font-size: 1.55rem; margin: 0 0 .3rem; }
header p { margin: .15rem 0; color: #333; }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; padding: 0; margin: .8rem 0 0; }
nav a { color: #0b4f8a; }
h2 { font-size: 1.2rem; border-bottom: 2px solid #111; padding-bottom: .15rem; margin: 2rem 0 .6rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .3rem 0 1rem; font-size: .82rem; max-width: 100%; }
th, td { border: 1px solid #888; padding: .18rem .45rem; text-align: left; vertical-align: top;
  overflow-wrap: break-word; }
thead th { background: #eee; }
table.facts th { background: #f4f4f4; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
/* The strategies' time table has many columns: smaller, and numbers may wrap before units. */
table.strategy-times { font-size: .74rem; }
table.strategy-times td.num { white-space: normal; }
/* Cells of long unbroken words (paths, mount options, JSON, ids) may break anywhere. */
table.targets td, table.facts td, table.spec td + td, td code, p, li, figcaption, pre { overflow-wrap: anywhere; }
/* A flag's text and a point's parameters may break anywhere too, so neither widens a table. */
td .flag, table.summary td:first-child { overflow-wrap: anywhere; }
/* Narrow screens: tighter tables, and a number may wrap before its unit. */
@media screen and (max-width: 960px) {
  body { padding: 1rem .8rem 2rem; }
  table { font-size: .74rem; }
  th, td { padding: .12rem .28rem; }
  td.num { white-space: normal; }
}
.flag { font-weight: 700; }
.flag::before { content: "\2691\00a0"; }
.ok { color: #333; }
table.findings tr.holds td:last-child { color: #1a6b2f; font-weight: 700; }
table.findings tr.does-not-hold td:last-child { color: #a11; font-weight: 700; }
table.findings tr.inconclusive td:last-child { color: #555; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .8rem; }
pre { white-space: pre-wrap; background: #f6f6f6; border: 1px solid #ddd; padding: .6rem; }
figure.plot { margin: 1rem 0 2rem; }
figure.plot svg { display: block; width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: .85rem; margin-top: .3rem; }
figcaption .cmd { display: block; color: #444; }
.note { font-size: .85rem; color: #333; }
footer { margin-top: 3rem; font-size: .8rem; color: #444; border-top: 1px solid #aaa; padding-top: .5rem; }
@media print {
  @page { size: A4; margin: 12mm; }
  body { max-width: none; padding: 0; font-size: 9.5pt; }
  nav { display: none; }
  h2 { break-after: avoid; page-break-after: avoid; }
  figure.plot, table.facts, pre, tr { break-inside: avoid; page-break-inside: avoid; }
  figure.plot svg { border: none; }
  .table-wrap { overflow: visible; }
  thead th { background: none; }
  a { color: #000; }
  figcaption .cmd { display: none; }
}
"#;

/// The whole page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"iolab {}\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_escapes() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000.5), "2023-11-14 22:13:20 UTC");
        assert_eq!(esc("a<b & \"c\" 'd'"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;");
    }

    /// A data link carries standard base64 with padding (RFC 4648's vectors, section 10).
    #[test]
    fn data_links_carry_standard_base64() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, coded) in cases {
            let link = data_link("x.txt", "text/plain", plain.as_bytes(), "y");
            assert!(link.contains(&format!("href=\"data:text/plain;base64,{coded}\"")), "{link}");
        }
    }
}
