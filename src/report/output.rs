//! Output files (`-o`, `--output`, `--save-spec`): written to a temporary file in the same
//! directory and renamed into place only when complete, so a failed or interrupted command
//! leaves no partial file and the old one as it was. Before anything is written the path is
//! checked: it never names an iolab store (or its `-wal`/`-shm`), a file the command reads, or
//! a file in a run's work directory; it is no device, directory or FIFO, and lies under no
//! `/dev` or kernel pseudo file system; and an existing file that is not an earlier output of
//! the same kind (nor empty) is replaced only with `--force`. Like the shell's `>`, a path that
//! is a symbolic link is followed: the checks are of the file it leads to, which is replaced
//! in its own directory (the link stays and shows the new file).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::text::escape_path;

/// What an output is; an existing file of the same kind is replaced without `--force`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `iolab report`, `results compare --format html`.
    Html,
    Svg,
    Png,
    /// `results export --json`.
    ExperimentJson,
    /// `results export --csv`.
    ExperimentCsv,
    /// `results trace` (CSV).
    TraceCsv,
    /// `results trace --json` (JSON lines).
    TraceJson,
    /// An experiment file (`tune --save-spec`).
    Spec,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Html => "iolab HTML report",
            Kind::Svg => "iolab SVG plot",
            Kind::Png => "PNG image",
            Kind::ExperimentJson => "iolab experiment JSON",
            Kind::ExperimentCsv => "iolab experiment CSV",
            Kind::TraceCsv => "iolab trace CSV",
            Kind::TraceJson => "iolab trace JSON",
            Kind::Spec => "iolab experiment file",
        }
    }

    /// Whether `head` (the first bytes of an existing file) begins an output of this kind.
    fn recognizes(self, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        match self {
            Kind::Html => {
                text.starts_with("<!DOCTYPE html>")
                    && text.contains("<meta name=\"generator\" content=\"iolab")
            }
            Kind::Svg => {
                text.starts_with("<svg ")
                    && text
                        .lines()
                        .next()
                        .is_some_and(|l| l.contains("role=\"img\" font-family=\"DejaVu Sans"))
            }
            Kind::Png => head.starts_with(b"\x89PNG\r\n\x1a\n"),
            Kind::ExperimentJson => {
                text.starts_with("{\n  \"schema_version\": ") && text.contains("\"iolab_version\"")
            }
            Kind::ExperimentCsv => text.starts_with("experiment_id,point,params,phase,"),
            Kind::TraceCsv => text.starts_with("run_id,point,rep,phase,worker,op,"),
            Kind::TraceJson => text.starts_with("{\"run_id\":"),
            Kind::Spec => text.starts_with("# ") && text.contains("# Run it with: iolab run"),
        }
    }
}

/// An output being written: a temporary file beside its final place, renamed there by
/// [`OutputFile::commit`] and removed if dropped before.
pub struct OutputFile {
    given: PathBuf,
    target: PathBuf,
    tmp: PathBuf,
    file: Option<std::io::BufWriter<File>>,
}

impl OutputFile {
    /// Checks `given` (the option `field`) for an output of `kind` and makes its temporary
    /// file. `reading`: the files the command reads (the store first), never replaced.
    pub fn create(
        given: &Path,
        field: &str,
        kind: Kind,
        force: bool,
        reading: &[&Path],
    ) -> Result<OutputFile> {
        let target = check(given, field, kind, force, reading)?;
        let dir = target.parent().expect("a resolved output has a directory");
        let name = target.file_name().expect("a resolved output has a name").to_string_lossy();
        // The same extension: some writers pick the format by it (PNG).
        let tmp = dir.join(format!(".iolab-tmp-{}-{name}", crate::target::marker::new_run_id()));
        // Registered first: a stop signal right after the creation still removes it.
        crate::env::signals::remove_on_stop(&tmp);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o666)
            .open(&tmp)
            .map_err(|e| {
                crate::env::signals::keep_on_stop(&tmp);
                Error::io("create", &tmp, None, e)
            })?;
        Ok(OutputFile {
            given: given.to_path_buf(),
            target,
            tmp,
            file: Some(std::io::BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The temporary file (buffered), to write the output into.
    pub fn file(&mut self) -> &mut std::io::BufWriter<File> {
        self.file.as_mut().expect("an output is written before it is committed")
    }

    /// The temporary file's path (for writers that open a path themselves).
    pub fn tmp_path(&self) -> &Path {
        &self.tmp
    }

    /// Flushes the output and renames it into place (not once a stop signal came: then the
    /// temporary file is removed and the old file stays).
    pub fn commit(mut self) -> Result<()> {
        crate::env::signals::check()?;
        let f = self.file.take().expect("committed once");
        let f = f.into_inner().map_err(|e| Error::io("write", &self.tmp, None, e.into_error()))?;
        f.sync_all().map_err(|e| Error::io("fsync", &self.tmp, None, e))?;
        drop(f);
        std::fs::rename(&self.tmp, &self.target).map_err(|e| Error::io("rename", &self.target, None, e))?;
        // Renamed: nothing is left to remove.
        crate::env::signals::keep_on_stop(&self.tmp);
        self.tmp = PathBuf::new();
        Ok(())
    }

    /// The path as the user gave it, for messages.
    pub fn given(&self) -> &Path {
        &self.given
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
            crate::env::signals::keep_on_stop(&self.tmp);
        }
    }
}

fn refuse(field: &str, given: &Path, why: impl Into<String>) -> Error {
    Error::spec(field, escape_path(given), why)
}

/// The file `given` leads to: symbolic links followed (at most 40), its directory resolved.
fn resolve(given: &Path, field: &str) -> Result<PathBuf> {
    let mut p =
        std::path::absolute(given).map_err(|e| refuse(field, given, format!("cannot resolve: {e}")))?;
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)
                    .map_err(|e| refuse(field, given, format!("cannot read the link: {e}")))?;
                p = p.parent().unwrap_or(Path::new("/")).join(to);
            }
            _ => {
                let name = match p.file_name() {
                    Some(n) if !given.as_os_str().as_encoded_bytes().ends_with(b"/") => n.to_owned(),
                    _ => return Err(refuse(field, given, "names a directory, not a file")),
                };
                let dir = p.parent().unwrap_or(Path::new("/"));
                let dir = dir.canonicalize().map_err(|e| {
                    refuse(field, given, format!("its directory {} cannot be used: {e}", escape_path(dir)))
                })?;
                return Ok(dir.join(name));
            }
        }
    }
    Err(refuse(field, given, "too many levels of symbolic links"))
}

/// The same file: the same path, or the same inode.
fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Whether `path` is an iolab store: an SQLite file with iolab's schema version.
pub fn is_store(path: &Path) -> bool {
    let mut head = [0u8; 16];
    let sqlite =
        File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == b"SQLite format 3\0";
    sqlite
        && crate::store::open_reader(path, true)
            .and_then(|c| {
                c.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| {
                    r.get::<_, String>(0)
                })
            })
            .is_ok()
}

/// Checks an output path (see the module's text); returns the file to replace.
pub fn check(given: &Path, field: &str, kind: Kind, force: bool, reading: &[&Path]) -> Result<PathBuf> {
    let target = resolve(given, field)?;
    let dir = target.parent().expect("resolved");
    if dir.starts_with("/dev") {
        return Err(refuse(
            field,
            given,
            format!("{} is under /dev; iolab writes no output among devices", escape_path(dir)),
        ));
    }
    if let Some(fs) = crate::target::device::pseudo_fs(dir) {
        return Err(refuse(
            field,
            given,
            format!("{fs} is a pseudo file system (kernel state shown as files), not a place for output"),
        ));
    }
    for (i, r) in reading.iter().enumerate() {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut side = r.as_os_str().to_owned();
            side.push(suffix);
            let side = PathBuf::from(side);
            let side = resolve(&side, field).unwrap_or(side);
            if same_file(&target, &side) {
                let what =
                    if i == 0 { "the results store this command reads" } else { "a file this command reads" };
                return Err(refuse(
                    field,
                    given,
                    format!("that is {what} ({}); an output never replaces it", escape_path(r)),
                ));
            }
        }
    }
    if dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".iolab-"))
        && dir.join(".iolab-owner").exists()
    {
        return Err(refuse(
            field,
            given,
            format!("{} is the work directory of a run; an output never goes there", escape_path(dir)),
        ));
    }
    let meta = match std::fs::metadata(&target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(target),
        Err(e) => return Err(refuse(field, given, format!("cannot stat: {e}"))),
        Ok(m) => m,
    };
    if !meta.is_file() {
        return Err(refuse(
            field,
            given,
            format!("{}, not a file an output replaces", crate::env::input::kind_of(meta.file_type())),
        ));
    }
    let name = target.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let store_side = ["-wal", "-shm", "-journal"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .is_some_and(|base| is_store(&target.with_file_name(base)));
    if is_store(&target) || store_side {
        return Err(refuse(field, given, "that is an iolab results store; an output never replaces one"));
    }
    if meta.len() == 0 {
        return Ok(target);
    }
    let mut head = Vec::with_capacity(4096);
    let _ = File::open(&target).and_then(|f| f.take(4096).read_to_end(&mut head));
    if kind.recognizes(&head) || force {
        return Ok(target);
    }
    Err(refuse(
        field,
        given,
        format!(
            "the file exists and is not an earlier {} (it begins `{}`); give --force to replace it",
            kind.name(),
            crate::text::one_line(&String::from_utf8_lossy(&head[..head.len().min(24)]))
        ),
    ))
}

/// Writes a whole output: `write` fills the temporary file, which then replaces `given`.
pub fn write_with(
    given: &Path,
    field: &str,
    kind: Kind,
    force: bool,
    reading: &[&Path],
    write: impl FnOnce(&mut OutputFile) -> Result<()>,
) -> Result<()> {
    let mut out = OutputFile::create(given, field, kind, force, reading)?;
    write(&mut out)?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind knows its own earlier outputs and nothing else.
    #[test]
    fn kinds_recognize_their_own_outputs() {
        let heads: [(Kind, &[u8]); 8] = [
            (Kind::Html, b"<!DOCTYPE html>\n<html lang=\"en\">\n<meta name=\"generator\" content=\"iolab 0.1.0\">"),
            (Kind::Svg, b"<svg width=\"8\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" font-family=\"DejaVu Sans, Verdana\">\n"),
            (Kind::Png, b"\x89PNG\r\n\x1a\n\0\0"),
            (Kind::ExperimentJson, b"{\n  \"schema_version\": 1,\n  \"iolab_version\": \"0.1.0\""),
            (Kind::ExperimentCsv, b"experiment_id,point,params,phase,rep\n"),
            (Kind::TraceCsv, b"run_id,point,rep,phase,worker,op,file\n"),
            (Kind::TraceJson, b"{\"run_id\":\"ab\",\"point\":0}\n"),
            (Kind::Spec, b"# iolab tune checkpoint\n# Run it with: iolab run THIS_FILE.toml\n"),
        ];
        for (k, head) in heads {
            for (other, h) in heads {
                assert_eq!(k.recognizes(h), k == other, "{k:?} on a {other:?}");
            }
            assert!(!k.recognizes(b"SQLite format 3\0"));
            assert!(!k.recognizes(b"[package]\nname = \"x\"\n"));
            let _ = head;
        }
    }
}
