//! Every spec parameter declared once: its key (the TOML key, sweep axis name and `--flag`),
//! its one-line help, and whether it takes a list. The experiment layer reads parameters by
//! these keys; reports tell a swept parameter from a variable by them.

/// One declared parameter: its key (TOML key, sweep axis name, `--flag` with `-` for `_`).
pub struct ParamDef {
    pub key: &'static str,
    pub help: &'static str,
    /// Takes several values (`dirs`, `ops`); others take exactly one.
    pub list: bool,
}

macro_rules! params {
    ($( $key:literal $(list=$list:literal)? : $help:literal ),* $(,)?) => {
        /// Every spec parameter, with the one-line help shown in `docs/spec.md`.
        pub const PARAMS: &[ParamDef] = &[ $( ParamDef { key: $key, help: $help, list: false $( || $list )? } ),* ];
    };
}

params! {
    "name": "a label for the experiment",
    "dirs" list=true: "target directories; iolab works inside its own work directory under each",
    "ops" list=true: "phases in order: write, rewrite, read; each may add :seq|:reverse|:random, :cold|:warm|:asis, :workers=N, :round_robin=R, :layout=L",
    "workers": "number of workers (threads or processes); a phase may set its own",
    "size": "bytes per file of per-worker layouts (= per worker by default); bytes per worker of shared layouts (KiB/MiB/GiB are 1024-based, kB/MB/GB 1000-based, NxRAM)",
    "bs": "bytes per I/O operation",
    "layout": "file-per-worker | shared | shared-strided | striped | striped-per-worker (see docs/layouts.md)",
    "files": "files in the set of file-per-worker and striped-per-worker (default: one per worker); worker w of W gets files w, w+W, ...",
    "files_per_worker": "K: files = K x workers, and each worker visits its K files round-robin (round_robin = K)",
    "round_robin": "R: a worker visits R of its files at a time, block by block (default 1)",
    "stripe_unit": "bytes per stripe unit of the striped layouts",
    "stripe_count": "striped layouts: stripe over the first N dirs (default: all)",
    "launcher": "thread | process (the binary re-executes itself once per worker)",
    "start": "barrier (workers start together) | free (each worker starts as soon as it is ready)",
    "latency": "off (no clock read per op) | histogram | trace (also every op's file, offset, start and duration, kept in the store)",
    "order": "seq | reverse | random (a seeded permutation covering every block once)",
    "seed": "seed for random orders and data",
    "engine": "I/O engine (see `iolab engines`)",
    "direct": "open with O_DIRECT (bypass the page cache)",
    "sync": "none | end | each | every:SIZE (commit after every SIZE bytes per worker)",
    "sync_call": "fsync | fdatasync | msync (msync: engine mmap only, and its default)",
    "open_sync": "none | sync | dsync (open with O_SYNC or O_DSYNC)",
    "prealloc": "preallocate files with fallocate before a write phase (timed separately)",
    "cache": "cold | warm | asis: cache state before each phase (cold = committed, evicted and checked)",
    "drop_caches": "with cache=cold, also write 3 to /proc/sys/vm/drop_caches (root only)",
    "reps": "repetitions of the whole run",
    "keep": "keep the data files after the run",
    "warmup": "warm-up runs of each point before its first measured one (stored, not in the statistics)",
    "settle": "sleep this long before each run (e.g. 2s, 500ms)",
    "prime_memory": "touch and free this many bytes just before each run (e.g. 4GiB, 0.5xRAM; 0 = off)",
    "interleave": "order of the runs of a sweep: round-robin over points, shuffle (seeded by seed) or shuffle:SEED",
    "verify": "blocks carry a header (run, file, offset, generation, checksum) written with the data and checked on every read",
    "allow_device" list=true: "command line only: a path under /dev that may be a target (exact path); devices in use are always refused",
    "reuse": "read the data files a kept run (--keep) left, instead of writing new ones: the run id; read phases only",
    "iodepth": "ops in flight per worker (asynchronous engines: uring)",
    "window": "mmap window size (engine mmap); default: the whole file",
    "mem_len": "strided memory: bytes taken from every mem_stride bytes of the buffer",
    "mem_stride": "strided memory: distance between the starts of successive mem_len pieces",
    "strategy": "compute/I-O overlap strategy (Benson et al. 2003): S1A | S1B | S2 | S3 | S5 (see docs/strategies.md)",
    "iters": "strategies: iterations of the compute/write loop (size = iters x bs)",
    "comptime": "strategies: simulated compute time, e.g. 2s (each of the workers' worth; see docs/strategies.md)",
}

/// Whether `key` names a spec parameter (else a sweep axis of that key is a variable).
pub fn is_param(key: &str) -> bool {
    let k = key.replace('-', "_");
    PARAMS.iter().any(|d| d.key == k) || k == "dir" || k == "op"
}
