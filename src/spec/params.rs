//! Every spec parameter declared once ([`PARAMS`]): its key (the TOML key and sweep axis
//! name), its command-line flags, its one-line help and its `docs/spec.md` row. The experiment
//! layer reads parameters by these keys and builds the command line and the docs table from
//! them; reports tell a swept parameter from a variable by them.

/// One declared parameter.
#[derive(Debug)]
pub struct ParamDef {
    /// The TOML key, sweep axis and `--set` key.
    pub key: &'static str,
    /// The command-line flags that set it; the first is its own.
    pub flags: &'static [Flag],
    /// The default, as `docs/spec.md` states it (Markdown).
    pub default: &'static str,
    /// One line: the `--help` of its flags and the start of its `docs/spec.md` row.
    pub help: &'static str,
    /// What `docs/spec.md` says after the help line (Markdown); empty when nothing.
    pub more: &'static str,
    /// Takes several values (`dirs`, `ops`, `allow_device`); others take exactly one.
    pub list: bool,
}

/// One command-line flag of a parameter.
#[derive(Debug)]
pub struct Flag {
    /// The long name, without the dashes.
    pub name: &'static str,
    /// The value's placeholder in `--help` (switches take none).
    pub value_name: &'static str,
    pub kind: FlagKind,
    /// A value may start with `-` (numbers, sizes, durations), so `--workers -1` is refused
    /// by the parameter's own check, naming it, instead of being taken for a flag.
    pub hyphen_values: bool,
    /// Its own help line (an alias saying what it stands for); else the parameter's.
    pub help: Option<&'static str>,
}

/// How a flag gives the parameter its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// `--flag VALUE`: the one value.
    Value,
    /// `--flag VALUE`, repeatable: each occurrence adds a value.
    Repeated,
    /// `--flag A,B,...`: the values, comma-separated.
    Commas,
    /// `--flag` alone: sets the parameter to this value.
    Switch(&'static str),
}

const fn value(name: &'static str, value_name: &'static str) -> Flag {
    Flag { name, value_name, kind: FlagKind::Value, hyphen_values: false, help: None }
}

/// A value that may start with `-` (a number, size or duration).
const fn number(name: &'static str, value_name: &'static str) -> Flag {
    Flag { hyphen_values: true, ..value(name, value_name) }
}

const fn switch(name: &'static str) -> Flag {
    Flag { kind: FlagKind::Switch("true"), ..value(name, "") }
}

const fn param(
    key: &'static str,
    flags: &'static [Flag],
    default: &'static str,
    help: &'static str,
    more: &'static str,
) -> ParamDef {
    ParamDef { key, flags, default, help, more, list: false }
}

const fn list(def: ParamDef) -> ParamDef {
    ParamDef { list: true, ..def }
}

/// Every spec parameter, in the order experiment files and `docs/spec.md` list them.
pub const PARAMS: &[ParamDef] = &[
    param("name", &[value("name", "NAME")], "file stem, or `default`", "A label for the experiment", ""),
    list(param(
        "dirs",
        &[
            Flag { kind: FlagKind::Repeated, ..value("dir", "DIR") },
            Flag {
                kind: FlagKind::Commas,
                help: Some("Target directories, comma-separated (an alias of --dir; a dir may repeat)"),
                ..value("targets", "DIR,DIR,...")
            },
        ],
        "`.`",
        "Target directories; iolab works inside its own work directory (.iolab-RUNID) under each",
        "`targets` is an alias. A dir may repeat (one disk as several logical targets of a striped file)",
    )),
    list(param(
        "ops",
        &[value("op", "OPS")],
        "`write,read:cold,read:warm` (with `direct`: `write,read:cold`)",
        "Phases in order, e.g. write,read:cold,read:warm; each is write, rewrite, read or blast (with servers), with optional :ORDER, :CACHE, :workers=N, :round_robin=R, :layout=L, :runtime=D, :stonewall=D; or a metadata phase: create, stat, open, read-files, rename, unlink, mkdir, rmdir, find (with optional :CACHE)",
        "See [Phases](#phases)",
    )),
    param(
        "workers",
        &[
            number("workers", "WORKERS"),
            Flag {
                help: Some("The client ranks of a run with --servers (an alias of --workers)"),
                ..number("clients", "CLIENTS")
            },
        ],
        "`1`; under mpirun the ranks (with `servers`: the ranks not serving)",
        "Number of workers (threads or processes); a phase may set its own (read:workers=4)",
        "With `servers`, the clients: ranks 0..C-1, one worker each (`clients` is an alias)",
    ),
    param(
        "size",
        &[number("size", "SIZE")],
        "`512MiB`",
        "Bytes per file of the per-worker layouts (per worker when files = workers), per worker of the shared ones: 4096, 4KiB, 4k, 4kB (=4000), 1MiB, 2xRAM",
        "The shared file is `size` x `workers`. Units: [above](#units)",
    ),
    param("bs", &[number("bs", "BS")], "`1MiB`", "Bytes per operation; size must be a multiple", ""),
    param(
        "layout",
        &[value("layout", "LAYOUT")],
        "`file-per-worker`",
        super::Layout::CHOICES,
        "`shared`: one file, contiguous segments; `shared-strided`: one file, worker w of W owns blocks w, w+W, ...; `striped`: one logical file striped over the targets, contiguous segments; `striped-per-worker`: each worker's file striped. See [layouts.md](layouts.md)",
    ),
    param(
        "files",
        &[number("files", "FILES")],
        "`workers`",
        "Files in the set of file-per-worker and striped-per-worker (default: one per worker)",
        "Worker w of a phase with W workers gets files w, w+W, w+2W, ...",
    ),
    param(
        "files_per_worker",
        &[number("files-per-worker", "K")],
        "-",
        "K files per worker, visited round-robin: files = K x workers and round_robin = K",
        "The presets R5 and R6 use it",
    ),
    param(
        "round_robin",
        &[number("round-robin", "R")],
        "`1`",
        "R: files a worker visits at a time, block by block (block 1 of each, then block 2, ...)",
        "Then the next R; 1 = one file after another. A phase may set its own",
    ),
    param(
        "stripe_unit",
        &[number("stripe-unit", "SIZE")],
        "`1MiB`",
        "Stripe unit of the striped layouts (a multiple of 512 bytes)",
        "`bs` must be a multiple or a divisor of it. The other layouts ignore `stripe_unit` and `stripe_count`, so a sweep over `layout` may keep them",
    ),
    param(
        "stripe_count",
        &[number("stripe-count", "N")],
        "all dirs",
        "Striped layouts: stripe over the first N target dirs (one component file on each)",
        "",
    ),
    param(
        "pieces",
        &[
            value("pieces", "PIECES"),
            Flag {
                help: Some(
                    "With --servers: a block's requests to the servers one after another (serial) or all at once (parallel); an alias of --pieces",
                ),
                ..value("fanout", "FANOUT")
            },
        ],
        "`serial`",
        "Striped layouts, a block over several stripe units: serial (its pieces one after another, each an op) | parallel (all at once, one op per block)",
        "`parallel` issues a block's pieces as one io_uring batch and waits for them all, as Intel CFS sent a buffer's requests to its I/O nodes together; engine psync, or the clients of `servers` (`fanout` is an alias there). See [layouts.md](layouts.md#striped-one-logical-file-declustered-over-t-targets)",
    ),
    param(
        "launcher",
        &[value("launcher", "LAUNCHER")],
        "`thread`; `mpi` under mpirun",
        "thread | process (the binary re-executes itself once per worker) | mpi (the ranks of `mpirun -np N iolab ...`, in a build with the mpi feature)",
        "A process worker is `iolab __worker`; MPI ranks: docs/mpi.md",
    ),
    param(
        "reorder_reads",
        &[value("reorder-reads", "SHIFT")],
        "none",
        "MPI: rank r reads what rank r+SHIFT wrote (a number), or `node`: shifted by the ranks per host, so no read is served by the cache of the host that wrote",
        "IOR's task reordering (`-C`, `-Q`); read phases only",
    ),
    param(
        "servers",
        &[number("servers", "S")],
        "none",
        "MPI: the last S ranks are I/O servers holding the files (a striped file: one component each), answering the clients' requests over MPI; the other ranks are clients",
        "Russell's BPFS servers, Intel CFS's I/O nodes. Clients are ranks 0..`workers`-1; the layouts place file f (a striped file's component f) on server f mod S. See [mpi.md](mpi.md#io-server-ranks)",
    ),
    param(
        "server_dir",
        &[value("server-dir", "DIR")],
        "the first of `dirs`",
        "With servers: the directory each server keeps its files in, on its own host (node-local; the same path on every server host)",
        "Each host's first server rank makes the work directory there and checks its free space",
    ),
    param(
        "server_depth",
        &[number("server-depth", "N")],
        "`4`",
        "With servers: requests a client keeps in flight to one server at once (with pieces = parallel), 1..64",
        "",
    ),
    param(
        "server_store",
        &[value("server-store", "STORE")],
        "`disk`",
        "With servers: disk (files, pread/pwrite) | memory (no file, no disk I/O: writes dropped, reads made in memory; the protocol's own cost)",
        "Russell's R9",
    ),
    param(
        "blast_transport",
        &[value("blast-transport", "TRANSPORT")],
        "`mpi`",
        "ops = blast: mpi (MPI_Send per block) | tcp (a TCP connection between the two ranks' hosts, its address sent over MPI)",
        "Russell's R8. The server acknowledges the count it received; that acknowledgement ends the client's time",
    ),
    param(
        "start",
        &[value("start", "START")],
        "`barrier`",
        "barrier (workers open their files, then start together) | free (each starts as soon as its files are open)",
        "`free` is Russell's uncoordinated children; t_i counts from each worker's own start",
    ),
    param(
        "latency",
        &[
            value("latency", "LATENCY"),
            Flag {
                kind: FlagKind::Switch("trace"),
                help: Some("Keep every op's file, offset, start and duration in the store (latency = trace)"),
                ..value("trace", "")
            },
        ],
        "`histogram`",
        "off (no clock read per op) | histogram (per worker) | trace (also every op's file, offset, start and duration, kept in the store)",
        "`off` leaves t_i, commit times and rates: the least overhead, see [performance.md](performance.md). A trace streams to the store in batches (`iolab results trace`); the dominant periods of the latency series are reported",
    ),
    param(
        "order",
        &[value("order", "ORDER")],
        "`seq`",
        "seq | reverse | random (a seeded permutation covering every block once)",
        "",
    ),
    param("seed", &[number("seed", "SEED")], "`1`", "Seed of random orders and of the data", ""),
    param(
        "engine",
        &[value("engine", "ENGINE")],
        "`psync`",
        "I/O engine (`list` lists them, as `iolab engines` does)",
        "See [engines.md](engines.md)",
    ),
    param(
        "mpiio",
        &[value("mpiio", "MODE")],
        "`independent`",
        "engine = mpiio: independent (MPI_File_write_at, read_at) | collective (write_at_all, read_at_all; a shared file)",
        "In a build with the mpi feature, under mpirun; see [engines.md](engines.md)",
    ),
    list(param(
        "mpiio_hint",
        &[Flag { kind: FlagKind::Repeated, ..value("mpiio-hint", "KEY=VALUE") }],
        "none",
        "engine = mpiio: an MPI-IO hint for MPI_File_open, e.g. romio_cb_write=enable or cb_nodes=2",
        "",
    )),
    param(
        "direct",
        &[switch("direct")],
        "`false`",
        "Open with O_DIRECT (bypass the page cache)",
        "`bs` must be a multiple of the device's logical block size",
    ),
    param(
        "sync",
        &[value("sync", "SYNC")],
        "`end`",
        "none | end (once per file, after its last op) | each (after every op) | every:SIZE (each time a worker has written SIZE bytes, and at the end)",
        "",
    ),
    param(
        "sync_call",
        &[value("sync-call", "SYNC_CALL")],
        "the engine's first (`fdatasync`; `msync` for mmap)",
        "fsync | fdatasync | msync (msync: engine mmap only)",
        "",
    ),
    param(
        "open_sync",
        &[value("open-sync", "OPEN_SYNC")],
        "`none`",
        "none | sync | dsync (open with O_SYNC or O_DSYNC)",
        "",
    ),
    param(
        "prealloc",
        &[switch("prealloc")],
        "`false`",
        "Preallocate files with fallocate before a write phase",
        "The time is reported as `prealloc_ns`, outside t_i",
    ),
    param(
        "alloc",
        &[value("alloc", "ALLOC")],
        "`fs`",
        "fs (the file system places blocks when it likes) | block (fallocate each block just before writing it, so blocks land in the order they are written)",
        "ext4, xfs and btrfs delay allocation to writeback, which lays out files written together (k-way interleaved) like files written one by one; `block` makes the interleave physical. The fallocate calls are inside t_i; before the phase the file system is synced so blocks freed by earlier files are free again. Not with `prealloc`. See [layouts.md](layouts.md#file-layout-after-writing-forensics)",
    ),
    param(
        "cache",
        &[value("cache", "CACHE")],
        "`cold`",
        "cold | warm | asis: the cache state before phases that name none (cold = committed, evicted and checked)",
        "",
    ),
    param(
        "drop_caches",
        &[switch("drop-caches")],
        "`false`",
        "With cold phases, also write 3 to /proc/sys/vm/drop_caches (root only)",
        "",
    ),
    param(
        "runtime",
        &[number("runtime", "DURATION")],
        "none",
        "Run every worker of every phase for this long, wrapping around its blocks (fio's time_based), e.g. 30s",
        "A phase may set its own (`read:runtime=10s`; `runtime=0`: none). Not with `stonewall`. See [Time-bounded phases](#time-bounded-phases)",
    ),
    param(
        "stonewall",
        &[number("stonewall", "DURATION")],
        "none",
        "Stop every worker of every phase at this time or when its blocks are done, whichever comes first (IOR's stonewall), e.g. 30s",
        "A phase may set its own (`write:stonewall=300s`; `stonewall=0`: none). Later phases read what each worker wrote. See [Time-bounded phases](#time-bounded-phases)",
    ),
    param(
        "wear_out",
        &[switch("wear-out")],
        "`false`",
        "With stonewall: after the stonewall every worker goes on to the most ops any worker had done (IOR's stoneWallingWearOut)",
        "",
    ),
    param("reps", &[number("reps", "REPS")], "`5`", "Repetitions of the whole run", ""),
    param("keep", &[switch("keep")], "`false`", "Keep the data files (in .iolab-RUNID) after the run", ""),
    param(
        "warmup",
        &[number("warmup", "WARMUP")],
        "`0`",
        "Warm-up runs of each point before its first measured one, stored but not in the statistics",
        "JSON `warmups`",
    ),
    param(
        "settle",
        &[value("settle", "DURATION")],
        "`0`",
        "Sleep this long before each run, e.g. 2s, 500ms",
        "The time slept is stored with the run",
    ),
    param(
        "prime_memory",
        &[value("prime-memory", "SIZE")],
        "`0`",
        "Touch and free this much memory just before each run, e.g. 4GiB, 0.5xRAM (below 90% of RAM; 0 = off)",
        "",
    ),
    param(
        "interleave",
        &[value("interleave", "INTERLEAVE")],
        "`round-robin`",
        "Run order of an experiment: round-robin (over its points) | shuffle (seeded by seed) | shuffle:SEED",
        "",
    ),
    param(
        "verify",
        &[switch("verify")],
        "`false`",
        "Write a verify header (run, file, offset, generation, checksum) into every block and check every block read",
        "A mismatch fails the run (exit 1). `bs` must be at least 512 bytes. Layout: [safety.md](safety.md#verification)",
    ),
    list(param(
        "allow_device",
        &[Flag { kind: FlagKind::Repeated, ..value("allow-device", "PATH") }],
        "none",
        "Allow this exact path under /dev as a target; devices in use are always refused",
        "Command line only (refused in a TOML file). Block and character devices are refused in any case (raw device I/O is not built)",
    )),
    param(
        "reuse",
        &[value("reuse", "RUNID")],
        "none",
        "Read the files a kept run (--keep) left, instead of writing new ones (read phases only)",
        "The spec must plan the same files (names and sizes) and seed. Nothing is created, written or removed",
    ),
    param(
        "iodepth",
        &[number("iodepth", "IODEPTH")],
        "`1`",
        "Ops in flight per worker (above 1: asynchronous engines only, uring up to 4096)",
        "",
    ),
    param(
        "window",
        &[number("window", "WINDOW")],
        "whole file",
        "mmap window size (engine mmap; default: the whole file)",
        "A multiple of the page size, and at least the `every:` sync size; `file` = whole file",
    ),
    param(
        "mem_len",
        &[number("mem-len", "MEM_LEN")],
        "none",
        "Strided memory: each op gathers (or scatters) mem_len bytes from every mem_stride bytes of its buffer",
        "It must divide `bs`; set both or neither",
    ),
    param(
        "mem_stride",
        &[number("mem-stride", "MEM_STRIDE")],
        "none",
        "Strided memory: distance between the starts of successive mem_len pieces",
        "At least `mem_len`; the buffer is `bs / mem_len x mem_stride` bytes",
    ),
    param(
        "strategy",
        &[value("strategy", "STRATEGY")],
        "none",
        "Compute/I-O overlap strategy: S1A | S1B | S2 | S3 | S5 (Benson et al. 2003)",
        "See [strategies.md](strategies.md). It changes the defaults of `workers` (2), `ops` (`write`), `layout` (its own) and `size` (`iters` x `bs`)",
    ),
    param(
        "iters",
        &[number("iters", "ITERS")],
        "`size` / `bs`",
        "Strategies: iterations of the compute/write loop (size = iters x bs)",
        "Each compute worker produces `bs` bytes per iteration (S3's one compute worker `workers` x `bs`)",
    ),
    param(
        "comptime",
        &[number("comptime", "DURATION")],
        "`0s`",
        "Strategies: simulated compute time per worker, e.g. 2s, 500ms",
        "The program spins `workers` x `comptime` of CPU in all, split over the iterations and its compute workers (so each of S1A's workers spins `comptime`, S3's one compute worker 2 x `comptime`); see [strategies.md](strategies.md#compute-time)",
    ),
    param(
        "md_files",
        &[number("md-files", "N")],
        "`1000` (with metadata phases)",
        "Metadata phases: items (files, or directories with mkdir) per worker (mdtest -n)",
        "Spread evenly over the directories of the worker's tree. See [metadata.md](metadata.md)",
    ),
    param(
        "md_dirs",
        &[value("md-dirs", "DIRS")],
        "`unique`",
        "Metadata phases: unique (a tree per worker, mdtest -u) | shared (one tree for all workers)",
        "",
    ),
    param(
        "md_depth",
        &[number("md-depth", "D")],
        "`0`",
        "Metadata phases: levels of directories below each tree's root (mdtest -z); 0: the root alone",
        "The tree has 1 + B + ... + B^D directories; they are made before the first phase, untimed",
    ),
    param(
        "md_fanout",
        &[number("md-fanout", "B")],
        "`1`",
        "Metadata phases: subdirectories per directory of the tree (mdtest -b)",
        "",
    ),
    param(
        "md_size",
        &[number("md-size", "SIZE")],
        "`0`",
        "Metadata phases: bytes create writes into each file and read-files reads back (mdtest -w, -e)",
        "",
    ),
    param(
        "md_shift",
        &[value("md-shift", "SHIFT")],
        "`0`",
        "Metadata phases: stat, open and read-files of worker w visit worker w+SHIFT's items (mdtest -N); `node` (MPI): the ranks per host, so every look-up is of another host's items",
        "The items of the run's W workers, mod W",
    ),
    param(
        "md_find",
        &[value("md-find", "GLOB")],
        "`*`",
        "Metadata phases: the names find counts as found (`*` any run of characters, `?` one)",
        "find walks every tree, reading each directory and stating every entry",
    ),
];

/// Whether `key` names a spec parameter (else a sweep axis of that key is a variable).
pub fn is_param(key: &str) -> bool {
    let k = key.replace('-', "_");
    PARAMS.iter().any(|d| d.key == k) || k == "dir" || k == "op"
}
