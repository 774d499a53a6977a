//! `iolab info`: host and storage facts for a directory, or where files' extents lie on the
//! device (`--layout`).

use std::io::Write;
use std::path::PathBuf;

use crate::cli::InfoArgs;
use crate::env::{host, sys};
use crate::error::{Error, Result};
use crate::report;
use crate::units::fmt_size;

use super::put;

/// `iolab info [DIR]` or `iolab info --layout FILE...`.
pub fn cmd_info(args: InfoArgs, stdout: &mut dyn Write) -> Result<()> {
    if !args.layout.is_empty() {
        return layout(&args.layout, args.json, stdout);
    }
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let dir = dir.canonicalize().map_err(|e| Error::spec("dir", dir.display(), e.to_string()))?;
    let h = host::probe(std::slice::from_ref(&dir));
    if args.json {
        let text = crate::json::to_string_pretty(&h).map_err(report::write_err)? + "\n";
        return put(stdout, &text);
    }
    let mut s = format!("host      {} ({})\n", h.hostname, h.host_id);
    s += &format!("os        {} {}\n", h.os, h.kernel);
    s += &format!("cpu       {} x {} @ {:.0} MHz\n", h.cpus, h.cpu_model, h.cpu_mhz);
    s += &format!("memory    {}\n", fmt_size(h.mem_bytes));
    s += &format!("iolab     {} (git {})\n", h.iolab_version, h.git_rev);
    for t in &h.targets {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        s += &format!("target    {}\n", t.dir.display());
        s += &format!("  file system  {} at {} ({})\n", t.fs_described(), t.mount_point, t.mount_options);
        if t.fs.fuse {
            s += &format!("  type         {} from {}\n", t.fs_type, t.mount_source);
        }
        if let Some(p) = &t.placement {
            s += &format!("  placement    {p}\n");
        }
        if t.fs.fuse {
            s += "  layout       FIEMAP: not answered by FUSE file systems; `iolab info --layout FILE` asks the file system where it can\n";
        }
        s += &format!(
            "  client cache {}\n",
            match &t.client_cache {
                Some(c) => c.describe(),
                None if t.fs.network == Some(true) => {
                    "none beside the kernel's pages that iolab knows of (a cold read evicts them on every reading host)".into()
                }
                None => "the kernel's page cache".into(),
            }
        );
        if let Some(c) = &t.client_config {
            s += &format!("  client conf  {c}\n");
        }
        s += &format!("  device       {} ({})\n", opt(&t.device), opt(&t.device_model));
        s += &format!(
            "  queue        rotational {}, scheduler {}, read-ahead {} KiB, logical block {} B\n",
            t.rotational.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            opt(&t.scheduler),
            t.read_ahead_kb.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            t.logical_block_bytes.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
        );
        s += &format!("  O_DIRECT     offsets and sizes aligned to {} B\n", t.direct_io_align_bytes);
        if let Ok((free, inodes)) = sys::fs_free(&t.dir) {
            // CephFS (among others) makes inodes as needed and reports -1 free.
            let inodes = if inodes == u64::MAX { "unlimited".to_string() } else { inodes.to_string() };
            s += &format!("  free         {} and {inodes} inodes\n", fmt_size(free));
        }
    }
    put(stdout, &s)
}

/// `iolab info --layout FILE...`: the files' extents (FIEMAP) and how often they alternate.
fn layout(files: &[PathBuf], json: bool, stdout: &mut dyn Write) -> Result<()> {
    for f in files {
        if !f.is_file() {
            return Err(Error::spec("layout", f.display(), "not a regular file"));
        }
    }
    let fail = |e: std::io::Error| Error::io("ioctl(FS_IOC_FIEMAP)", &files[0], None, e);
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    // A FUSE file system cannot answer FIEMAP: what it says of placement itself, if anything.
    if crate::env::forensics::probe(files, &names).is_err()
        && let Some(facts) =
            crate::env::forensics::probe_or_place(&names, files, |i| std::fs::File::open(&files[i]))
    {
        let text = if json {
            serde_json::to_string_pretty(&serde_json::json!({ "layout": facts }))
                .map_err(report::write_err)?
                + "\n"
        } else if facts.placement.is_empty() {
            format!(
                "{}; the file system tells no placement iolab can read\n",
                facts.fiemap_error.unwrap_or_default()
            )
        } else {
            format!(
                "{}; where the file system placed the files:\n{}",
                facts.fiemap_error.unwrap_or_default(),
                crate::env::placement::render(&facts.placement)
            )
        };
        return put(stdout, &text);
    }
    let text = if json {
        let (facts, extents) = crate::env::forensics::probe(files, &names).map_err(fail)?;
        let doc = serde_json::json!({
            "layout": crate::json::to_value(&facts).map_err(report::write_err)?,
            "extents": crate::json::to_value(&extents).map_err(report::write_err)?,
        });
        crate::json::to_string_pretty(&doc).map_err(report::write_err)? + "\n"
    } else {
        crate::env::forensics::render(files).map_err(fail)?
    };
    put(stdout, &text)
}
