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
