//! Jobs for `iolab tune`: the presets of common jobs (a checkpoint, a log, a bulk read, small
//! random reads, Benson et al.'s parallel output) and a job built from a preset and the
//! flags that override it, every value checked and named when refused.

use crate::error::{Error, Result};
use crate::spec::job::{Access, Direction, Durability, Job};
use crate::units::{parse_duration_ns, parse_size};

/// A preset job: what a common program does, in the words of the flags.
#[derive(Debug, Clone, Copy)]
pub struct JobPreset {
    pub name: &'static str,
    pub about: &'static str,
    pub direction: &'static str,
    pub access: &'static str,
    pub bytes: &'static str,
    pub op_size: &'static str,
    /// The program issues exactly this op size.
    pub op_fixed: bool,
    pub durable: &'static str,
    pub comptime: &'static str,
    pub workers: u32,
}

const fn preset(name: &'static str, about: &'static str) -> JobPreset {
    JobPreset {
        name,
        about,
        direction: "write",
        access: "seq",
        bytes: "1GiB",
        op_size: "1MiB",
        op_fixed: false,
        durable: "end",
        comptime: "0s",
        workers: 1,
    }
}

/// The preset jobs; `custom` starts from the first and needs `--bytes`.
pub const JOBS: &[JobPreset] = &[
    preset("checkpoint", "a program saving its state: one large write, all of it on disk at the end"),
    JobPreset {
        bytes: "64MiB",
        op_size: "4KiB",
        op_fixed: true,
        durable: "every:1MiB",
        ..preset("log", "appending records of a fixed size, committed at least every 1 MiB")
    },
    JobPreset { direction: "read", ..preset("bulk-read", "reading a large file once, from the disk (cold)") },
    JobPreset {
        direction: "read",
        access: "random",
        bytes: "256MiB",
        op_size: "4KiB",
        op_fixed: true,
        ..preset("random-read", "small reads of a fixed size at random places, from the disk (cold)")
    },
    JobPreset {
        bytes: "128MiB",
        op_size: "64KiB",
        op_fixed: true,
        durable: "every:1MiB",
        comptime: "2s",
        workers: 2,
        ..preset(
            "benson",
            "Benson et al. 2003: two workers each compute 2 s and write 1024 x 64 KiB, durable every 1 MiB",
        )
    },
];

/// What the command line says about the job: a preset's name (or `custom`) and the values
/// given to override it, as written.
#[derive(Debug, Clone, Default)]
pub struct JobArgs {
    pub job: String,
    pub bytes: Option<String>,
    pub direction: Option<String>,
    pub access: Option<String>,
    /// `--op-size`: the program's op size, which every candidate then issues.
    pub op_size: Option<String>,
    pub durable: Option<String>,
    pub comptime: Option<String>,
    pub workers: Option<String>,
    pub memory: Option<String>,
    pub dirs: Vec<String>,
}

/// The job the arguments describe; `ram_bytes` for sizes such as `2xRAM`. The directories
/// are checked when candidates resolve.
pub fn build(args: &JobArgs, ram_bytes: u64) -> Result<Job> {
    let p = if args.job == "custom" {
        if args.bytes.is_none() {
            return Err(Error::spec("bytes", "", "a custom job needs --bytes (how much data it moves)"));
        }
        JobPreset { name: "custom", ..JOBS[0] }
    } else {
        *JOBS.iter().find(|j| j.name == args.job).ok_or_else(|| {
            let names: Vec<&str> = JOBS.iter().map(|j| j.name).collect();
            Error::spec("job", &args.job, format!("one of: {}, custom (or list)", names.join(", ")))
        })?
    };
    let text = |given: &Option<String>, default: &'static str| given.clone().unwrap_or(default.into());
    let size = |key: &str, v: String| -> Result<u64> {
        match parse_size(&v, ram_bytes) {
            Ok(0) => Err(Error::spec(key, v, "must be positive")),
            Ok(n) => Ok(n),
            Err(e) => Err(Error::spec(key, v, e.0)),
        }
    };
    let bytes = size("bytes", text(&args.bytes, p.bytes))?;
    let op_bytes = size("op_size", text(&args.op_size, p.op_size))?;
    let d = text(&args.direction, p.direction);
    let direction = Direction::parse(&d)
        .ok_or_else(|| Error::spec("direction", &d, format!("one of: {}", Direction::NAMES.join(", "))))?;
    let a = text(&args.access, p.access);
    let access = Access::parse(&a).ok_or_else(|| Error::spec("access", &a, "seq or random"))?;
    let du = text(&args.durable, p.durable);
    let durability = Durability::parse(&du).map_err(|e| Error::spec("durable", &du, e))?;
    if !direction.writes() && args.durable.is_some() && durability != Durability::None {
        return Err(Error::spec("durable", &du, "a read job writes nothing to make durable"));
    }
    let c = text(&args.comptime, p.comptime);
    let comptime_ns = parse_duration_ns(&c).map_err(|e| Error::spec("comptime", &c, e.0))?;
    if comptime_ns > 0 && direction != Direction::Write {
        return Err(Error::spec(
            "comptime",
            &c,
            "compute is overlapped with writing (the strategies of Benson et al.): a write job only",
        ));
    }
    let workers = match &args.workers {
        None => p.workers,
        Some(w) => match w.trim().parse::<u32>() {
            Ok(n) if (1..=256).contains(&n) => n,
            _ => return Err(Error::spec("workers", w, "a whole number from 1 to 256")),
        },
    };
    if op_bytes > bytes / workers as u64 {
        return Err(Error::spec(
            "op_size",
            crate::units::fmt_size(op_bytes),
            format!(
                "more than one worker's share of the job ({} / {workers})",
                crate::units::fmt_size(bytes)
            ),
        ));
    }
    if bytes % op_bytes != 0 {
        return Err(Error::spec(
            "bytes",
            crate::units::fmt_size(bytes),
            format!("not a whole number of ops ({})", crate::units::fmt_size(op_bytes)),
        ));
    }
    let memory_bytes = args.memory.clone().map(|m| size("memory", m)).transpose()?;
    let dirs =
        if args.dirs.is_empty() { vec![".".into()] } else { args.dirs.iter().map(Into::into).collect() };
    Ok(Job {
        name: p.name.to_string(),
        bytes,
        direction,
        access,
        op_bytes,
        op_fixed: p.op_fixed || args.op_size.is_some(),
        durability: if direction.writes() { durability } else { Durability::None },
        comptime_ns,
        workers,
        memory_bytes,
        dirs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(job: &str) -> JobArgs {
        JobArgs { job: job.into(), ..Default::default() }
    }

    #[test]
    fn presets_build_and_flags_override_them() {
        for p in JOBS {
            let j = build(&args(p.name), 1 << 34).unwrap();
            assert_eq!(j.name, p.name);
        }
        let b = build(&args("benson"), 1 << 34).unwrap();
        assert_eq!((b.bytes, b.op_bytes, b.workers, b.comptime_ns), (128 << 20, 64 << 10, 2, 2_000_000_000));
        assert_eq!((b.durability, b.op_fixed), (Durability::Every(1 << 20), true));
        let mut a = args("checkpoint");
        assert!(!build(&a, 0).unwrap().op_fixed);
        a.op_size = Some("4MiB".into());
        a.bytes = Some("256MiB".into());
        a.workers = Some("2".into());
        let j = build(&a, 0).unwrap();
        assert_eq!((j.op_bytes, j.op_fixed, j.bytes, j.workers), (4 << 20, true, 256 << 20, 2));
        let r = build(&args("random-read"), 0).unwrap();
        assert_eq!(
            (r.direction, r.access, r.durability),
            (Direction::Read, Access::Random, Durability::None)
        );
    }

    #[test]
    fn bad_values_are_named() {
        let field = |a: JobArgs| match build(&a, 0) {
            Err(Error::Spec { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(args("nightly")), "job");
        assert_eq!(field(args("custom")), "bytes");
        assert_eq!(field(JobArgs { bytes: Some("0".into()), ..args("checkpoint") }), "bytes");
        assert_eq!(field(JobArgs { durable: Some("often".into()), ..args("checkpoint") }), "durable");
        assert_eq!(field(JobArgs { durable: Some("end".into()), ..args("bulk-read") }), "durable");
        assert_eq!(field(JobArgs { direction: Some("up".into()), ..args("checkpoint") }), "direction");
        assert_eq!(field(JobArgs { access: Some("zigzag".into()), ..args("checkpoint") }), "access");
        assert_eq!(field(JobArgs { workers: Some("0".into()), ..args("checkpoint") }), "workers");
        assert_eq!(field(JobArgs { comptime: Some("1s".into()), ..args("bulk-read") }), "comptime");
        assert_eq!(field(JobArgs { comptime: Some("soon".into()), ..args("checkpoint") }), "comptime");
        assert_eq!(field(JobArgs { op_size: Some("2GiB".into()), ..args("checkpoint") }), "op_size");
        assert_eq!(field(JobArgs { memory: Some("lots".into()), ..args("checkpoint") }), "memory");
        assert_eq!(field(JobArgs { bytes: Some("1500KiB".into()), ..args("checkpoint") }), "bytes");
    }
}
