//! Plain-text layout that every layer may use: rows of cells aligned under headers.

/// Lays out rows under headers; columns listed in `right` are right-aligned.
/// Every cell is shown on one line ([`one_line`]): a name from a user or a store with an escape
/// sequence or a newline never reaches a terminal raw.
pub fn text_table(headers: &[&str], rows: &[Vec<String>], right: &[usize]) -> String {
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| one_line(c)).collect()).collect();
    let rows = &rows;
    let ncol = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(ncol) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, c) in cells.enumerate() {
            let pad = width[i].saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if right.contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < ncol {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut headers.iter().copied());
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

/// `text` wrapped at spaces into lines of at most `width` characters (a longer word stays
/// whole on its own line): the first line starts with `first`, the others with `indent`
/// spaces; each line ends with a newline.
pub fn wrap(text: &str, width: usize, first: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = pad.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The width terminal output is laid out for: the terminal's columns when standard output is
/// one (at least 40), else 100.
pub fn terminal_width() -> usize {
    let mut ws = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points at a live,
    // writable `winsize` on this stack for the whole call; on a descriptor that is not a
    // terminal it fails and writes nothing.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws as *mut libc::winsize) };
    if rc == 0 && ws.ws_col > 0 { usize::from(ws.ws_col).max(40) } else { 100 }
}

/// Rows under headers as [`text_table`] lays them out when that fits in `width` columns; else
/// folded: the leading columns that fit stay a table, and each row's other columns follow it on
/// lines of their own, indented, as `header: value` pairs wrapped at `width`.
pub fn fit_table(headers: &[&str], rows: &[Vec<String>], right: &[usize], width: usize) -> String {
    // Each column's width as `text_table` makes it; `k` columns take their widths and two
    // spaces between each two.
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i)).map(|c| one_line(c).chars().count());
            cells.fold(headers[i].chars().count(), usize::max)
        })
        .collect();
    let fits = |k: usize| widths[..k].iter().sum::<usize>() + 2 * k.saturating_sub(1) <= width;
    let keep = (1..=headers.len()).rev().find(|&k| fits(k)).unwrap_or(1);
    if keep == headers.len() {
        return text_table(headers, rows, right);
    }
    let cut: Vec<Vec<String>> = rows.iter().map(|r| r.iter().take(keep).cloned().collect()).collect();
    let table = text_table(&headers[..keep], &cut, right);
    let mut lines = table.lines();
    let mut out = lines.next().unwrap_or("").to_string() + "\n";
    for (row, line) in rows.iter().zip(lines) {
        out += line;
        out.push('\n');
        let rest: Vec<String> = headers
            .iter()
            .zip(row)
            .skip(keep)
            .filter(|(_, c)| !c.is_empty())
            .map(|(h, c)| format!("{h}: {}", one_line(c)))
            .collect();
        if !rest.is_empty() {
            out += &wrap(&rest.join(" · "), width, "    ", 6);
        }
    }
    out
}

/// Every line of `text` longer than `width` wrapped at spaces, its continuation lines indented
/// two spaces past the line's own indent; shorter lines kept as they are.
pub fn wrap_lines(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if bare.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        // A label and the spaces that align what follows it (`target  /data: ...`) stay as
        // they are.
        let indent = bare.len() - bare.trim_start().len();
        let label = bare[indent..].find("  ").filter(|&i| !bare[indent..indent + i].contains(' '));
        let (first, rest) = match label {
            Some(i) => {
                let body = bare[indent + i..].trim_start();
                (&bare[..bare.len() - body.len()], body)
            }
            None => (&bare[..indent], bare.trim_start()),
        };
        out += &wrap(rest, width, first, indent + 2);
    }
    out
}

/// A path as text that stays on one line: control characters are shown as `\n`, `\t`,
/// `\r` or `\xNN`, a backslash as `\\`, and bytes that are not UTF-8 as `\xNN`.
pub fn escape_path(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Text that stays on one line: control characters shown as in [`escape_path`] (a value a
/// user gave, quoted back in an error).
pub fn one_line(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\t' => "\\t".to_string(),
            '\r' => "\\r".to_string(),
            c if c.is_control() => format!("\\x{:02x}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

/// Text for a terminal: control characters other than newlines shown as in [`one_line`], so an
/// escape sequence in a stored name never reaches the terminal raw.
pub fn terminal_safe(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return s.to_string();
    }
    s.split('\n').map(one_line).collect::<Vec<_>>().join("\n")
}

/// Text for a Markdown document's line or table cell: control characters shown as in
/// [`one_line`] (a newline as `\n`, so a cell stays on its row), and every character Markdown
/// reads as syntax (emphasis, code, links, HTML, tables, entities, headings) escaped with a
/// backslash, as CommonMark allows for any ASCII punctuation: `a|b *c*` is `a\|b \*c\*`.
pub fn markdown_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\`*_[]<>|~&#!$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    one_line(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_under_an_indent() {
        assert_eq!(wrap("aa bb cc dd", 8, "- ", 2), "- aa bb\n  cc dd\n");
        assert_eq!(wrap("a verylongword b", 6, "", 1), "a\n verylongword\n b\n");
        assert_eq!(wrap("", 10, "x: ", 3), "x:\n");
        assert_eq!(wrap_lines("short\n  aa bb cc\n", 8), "short\n  aa bb\n    cc\n");
        assert_eq!(wrap_lines("spec  aa bb cc", 11), "spec  aa bb\n  cc\n");
    }

    #[test]
    fn a_table_too_wide_folds_its_last_columns_under_each_row() {
        let rows = vec![vec!["write".to_string(), "12".into(), "a long flag text".into()]];
        let h = ["phase", "mean", "flags"];
        assert_eq!(fit_table(&h, &rows, &[1], 80), text_table(&h, &rows, &[1]));
        let folded = fit_table(&h, &rows, &[1], 16);
        assert_eq!(folded, "phase  mean\nwrite    12\n    flags: a\n      long flag\n      text\n");
        assert!(folded.lines().all(|l| l.chars().count() <= 16), "{folded}");
    }
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    #[test]
    fn escape_path_keeps_a_path_on_one_line() {
        assert_eq!(escape_path(Path::new("/tmp/a b")), "/tmp/a b");
        assert_eq!(escape_path(Path::new("/tmp/a\nb\tc\x1bd")), "/tmp/a\\nb\\tc\\x1bd");
        assert_eq!(escape_path(Path::new(OsStr::from_bytes(b"/tmp/\xffz"))), "/tmp/\\xffz");
        assert_eq!(escape_path(Path::new("/tmp/é\\")), "/tmp/é\\\\");
        assert_eq!(one_line("a\nb\\c\x07"), "a\\nb\\c\\x07");
        assert_eq!(terminal_safe("a\x1b[31mb\nc\td\n"), "a\\x1b[31mb\nc\\td\n");
        assert_eq!(text_table(&["h"], &[vec!["\x1b[2Jx\ny".into()]], &[]), "h\n\\x1b[2Jx\\ny\n");
    }

    #[test]
    fn markdown_escape_leaves_no_syntax_and_one_line() {
        assert_eq!(
            markdown_escape("h\x1b[31m|x\ny *b* <i>&amp;`c`"),
            "h\\x1b\\[31m\\|x\\ny \\*b\\* \\<i\\>\\&amp;\\`c\\`"
        );
        assert_eq!(markdown_escape("1.5 MB/s (x)"), "1.5 MB/s (x)");
        assert_eq!(markdown_escape("a\\b"), "a\\\\b");
    }
}
