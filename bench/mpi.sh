#!/usr/bin/env bash
# iolab on MPI ranks against the limit program (bench/mpi_limit.c: the same MPI and I/O calls,
# nothing else) and, given its source, IOR: a shared-file write (fdatasync at the end, inside
# the time) and a cold read on NP ranks of this host (with --api, through MPI-IO, independent or
# collective, against IOR alone). A warm-up run of each tool, then the
# tools alternated N times (the order rotating, so no tool always follows the same other one);
# per tool and phase min/median/max MB/s (10^6 B/s) and the ratios iolab/limit and iolab/IOR,
# every tool's figure by IOR's definition (all bytes over the span from the first open to the
# last close, commits included: iolab's agg), the load average beside each run. Then the scale
# of iolab's coordination: for 1, 4, 16 and 64 ranks (oversubscribed on a small machine), 1 MiB
# per rank, rank 0's peak RSS, the wall time of the whole mpirun, the time in the timed I/O and
# the rest, beside the limit program's wall time for the same work; iolab and the limit program
# alternate at each count (the order swapped each round), --scale-rounds times.
#
#   bench/mpi.sh [--ior-src PATH] [--quick] [OPTIONS] [DIR]
#     --ior-src PATH   IOR's public source (github.com/hpc/ior): copied to /tmp, built there
#                      against the same Open MPI (./bootstrap; ./configure CC=mpicc; make) and
#                      run beside the others; without it IOR is skipped (Debian has no package)
#     --quick          64 MiB per rank, scale points 1 4 16 (about a minute without IOR)
#     --np N           ranks of the comparison (default 4)
#     --size MIB       MiB per rank (default 256)
#     --bs KIB         KiB per op (default 1024)
#     --n N            alternations after the warm-up (default 5)
#     --prime MIB      memory touched and freed before each write (default 3 x the bytes
#                      written, at most 3072; 0 = off)
#     --scale "R ..."  rank counts of the scale table (default "1 4 16 64"; "" = none)
#     --scale-rounds N rounds of the scale table (default 3)
#     --iolab PATH     the iolab binary (default $IOLAB, else $CARGO_TARGET_DIR/release/iolab,
#                      else target/release/iolab), built with --features mpi
#     --api API        posix (default: pwrite/pread; the three tools), mpiio (MPI-IO
#                      independent: iolab --engine mpiio --mpiio independent, IOR -a MPIIO) or
#                      collective (iolab --mpiio collective, IOR -a MPIIO -c); the limit program
#                      makes POSIX calls only, so with mpiio and collective it is left out and
#                      --ior-src is needed
#     --io COMPONENT   Open MPI's MPI-IO component for every tool (mpirun --mca io COMPONENT:
#                      ompio or romio321 in Open MPI 4.1; default: Open MPI's choice)
#     --warm           with --api mpiio or collective: the read follows the write with nothing
#                      evicted (iolab read:asis), so that DIR may be a tmpfs and the tools' own
#                      MPI-IO paths are compared without a disk's noise
#     DIR              where the data files go (default .)
#
# Needs Open MPI (mpicc, mpirun), python3, /usr/bin/time; for IOR autoconf, automake, make.
# The cold read: every tool's file is committed and evicted with posix_fadvise(DONTNEED) (what
# iolab's read:cold does; mpi_limit does the same inside its run; for IOR, `mpi_limit evict`
# between IOR's write and its read), and mincore says how much is still resident. No
# drop_caches: it would also drop the dentries, inodes and binaries, which a tool that times
# its opens (IOR) would pay for.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ior_src="" quick=0 warm=0 dir=. np=4 size_mib="" bs_kib=1024 n=5 prime_mib="" scale="" scale_set=0 rounds=3 api=posix io=""
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --ior-src) ior_src=$(realpath "$2"); shift 2 ;;
    --quick) quick=1; shift ;;
    --np) np=$2; shift 2 ;;
    --size) size_mib=$2; shift 2 ;;
    --bs) bs_kib=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --prime) prime_mib=$2; shift 2 ;;
    --scale) scale=$2; scale_set=1; shift 2 ;;
    --scale-rounds) rounds=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    --api) api=$2; shift 2 ;;
    --io) io=$2; shift 2 ;;
    --warm) warm=1; shift ;;
    -h | --help) sed -n '2,47p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (bench/mpi.sh --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
    esac
done
if [ $quick = 1 ]; then
    size_mib=${size_mib:-64}
    [ $scale_set = 1 ] || scale="1 4 16"
else
    size_mib=${size_mib:-256}
    [ $scale_set = 1 ] || scale="1 4 16 64"
fi
size=$((size_mib << 20)) bs=$((bs_kib << 10))
[ "$bs" -gt 0 ] && [ $((size % bs)) = 0 ] || { echo "--size must be a multiple of --bs" >&2; exit 2; }
[ "$n" -ge 1 ] || { echo "--n must be at least 1" >&2; exit 2; }
[ "$rounds" -ge 1 ] || { echo "--scale-rounds must be at least 1" >&2; exit 2; }
case $api in
posix) iolab_api=() ior_api=(-a POSIX) ;;
mpiio) iolab_api=(--engine mpiio --mpiio independent) ior_api=(-a MPIIO) ;;
collective) iolab_api=(--engine mpiio --mpiio collective) ior_api=(-a MPIIO -c) ;;
*) echo "--api must be posix, mpiio or collective, not $api" >&2; exit 2 ;;
esac
[ $warm = 0 ] || [ "$api" != posix ] ||
    { echo "--warm is for --api mpiio or collective (the limit program always reads cold)" >&2; exit 2; }
read_op=read:cold
[ $warm = 0 ] || read_op=read:asis
[ "$api" = posix ] || [ -n "$ior_src" ] ||
    { echo "--api $api compares iolab with IOR only (the limit program makes POSIX calls): give --ior-src PATH" >&2; exit 2; }
[ -n "$prime_mib" ] || { prime_mib=$((3 * np * size_mib)); [ "$prime_mib" -le 3072 ] || prime_mib=3072; }
dir=$(realpath "$dir")

# What it needs.
. bench/lib.sh
need_open_mpi
command -v python3 >/dev/null || { echo "needs python3: apt-get install python3" >&2; exit 1; }
if [ -n "$scale" ] && [ ! -x /usr/bin/time ]; then
    echo "installing time (Debian package), for rank 0's peak RSS" >&2
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q time ||
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q time; }; } >/dev/null 2>&1 ||
        { echo "/usr/bin/time is needed for rank 0's peak RSS: apt-get install time" >&2; exit 1; }
fi
need_iolab_mpi "$iolab"

# Files: binaries, outputs and the IOR build in /tmp; data files in DIR. All removed at exit.
tmp=$(mktemp -d /tmp/iolab-bench-mpi.XXXXXX)
work=$(mktemp -d "$dir/.bench-mpi.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
asroot=()
[ "$(id -u)" != 0 ] || asroot=(--allow-run-as-root)
mpi() { # mpi NP CMD...: one mpirun on this host, ranks not bound (they may outnumber the cores)
    local np=$1
    shift
    mpirun "${asroot[@]}" --oversubscribe --bind-to none ${io:+--mca io "$io"} -np "$np" "$@"
}
# quiet CMD...: runs CMD with its stderr kept aside; on failure shows it and stops.
quiet() {
    "$@" 2>"$tmp/err.txt" || { local rc=$?; echo "failed ($rc): $*" >&2; tail -30 "$tmp/err.txt" >&2; exit 1; }
}

limit=$tmp/mpi_limit
mpicc -O2 -Wall -o "$limit" bench/mpi_limit.c
ior=""
if [ -n "$ior_src" ]; then
    build_ior "$ior_src" "$tmp"
fi

results=$tmp/results.txt   # lines: TOOL PHASE AGG_MBPS MIN_SAR_MBPS|- MAX_SAR_MBPS|- RESIDENT|- LOAD
resident=$tmp/resident.txt # lines: TOOL FRACTION, before each cold read
prime() { [ "$prime_mib" = 0 ] || "$limit" prime $((prime_mib << 20)); }
load() { cut -d' ' -f1 /proc/loadavg; }

run_iolab() {
    prime
    quiet mpi "$np" "$iolab" run --layout shared "${iolab_api[@]}" --op "write,$read_op" --size "${size_mib}MiB" \
        --bs "${bs_kib}KiB" --reps 1 --dir "$work" --json --quiet --no-store >"$tmp/iolab.json"
    python3 - "$tmp/iolab.json" "$np" "$(load)" >>"$results" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
np, load = int(sys.argv[2]), sys.argv[3]
for ph in d["points"][0]["phases"]:
    r = ph["repetitions"][0]
    assert r["status"] == "complete", r["status"]
    ranks = sorted(w["rank"] for w in r["workers"])
    assert ranks == list(range(np)), f"workers on ranks {ranks}, not one per rank of {np}"
    name = ph["name"].split(":")[0]
    res = f'{r["resident_fraction"]:.6f}' if name == "read" else "-"
    print("iolab", name, r["agg_bytes_per_s"] / 1e6, r["min_sar_bytes_per_s"] / 1e6, r["max_sar_bytes_per_s"] / 1e6, res, load)
EOF
}
run_limit() {
    rm -f "$work/limit.dat"
    prime
    quiet mpi "$np" "$limit" "$work/limit.dat" "$size" "$bs" >"$tmp/limit.out"
    awk -v load="$(load)" '$1 == "write" || $1 == "read" {
            printf "limit %s %.3f %.3f %.3f %s %s\n", $1, $2 / $5 * 1e3, $2 / $3 * 1e3, $4 / 1e6, $1 == "read" ? res : "-", load }
         $1 == "resident" { res = $2 }' "$tmp/limit.out" >>"$results"
    rm -f "$work/limit.dat"
}
# IOR: one shared file (no -F), block = size per rank, transfer = bs, one segment, fsync at the
# end of the write (-e, inside IOR's time), POSIX. Write and read are two runs so that the file
# can be evicted between them; on one host -C (read another task's data) would change nothing:
# IOR shifts by the tasks on node 0, which is all of them, and the page cache is shared anyway.
# IOR's figure is all bytes over the time from the first open to the last close.
ior_mbps() { # ior_mbps OP FILE: the summary's Max(MiB) of OP in MB/s
    awk -v op="$1" '/^Summary of all tests/ { s = 1 } s && $1 == op { printf "%.3f\n", $2 * 1.048576; exit }' "$2"
}
run_ior() {
    [ -n "$ior" ] || return 0
    local f=$work/ior.dat args=("${ior_api[@]}" -b "$size" -t "$bs" -s 1 -i 1 -o "$work/ior.dat")
    rm -f "$f"
    prime
    sync -f "$work"
    quiet mpi "$np" "$ior" "${args[@]}" -w -e -k >"$tmp/ior-w.out"
    local res w r
    res=1
    [ $warm = 1 ] || res=$("$limit" evict "$f" | awk '{ print $2 }')
    quiet mpi "$np" "$ior" "${args[@]}" -r >"$tmp/ior-r.out"
    w=$(ior_mbps write "$tmp/ior-w.out") r=$(ior_mbps read "$tmp/ior-r.out")
    [ -n "$w" ] && [ -n "$r" ] || { echo "no IOR summary in its output:" >&2; cat "$tmp/ior-w.out" "$tmp/ior-r.out" >&2; exit 1; }
    echo "ior write $w - - - $(load)" >>"$results"
    echo "ior read $r - - $res $(load)" >>"$results"
    rm -f "$f"
}

tools=(iolab)
[ "$api" != posix ] || tools+=(limit)
[ -z "$ior" ] || tools+=(ior)
if [ "$api" = posix ]; then
    echo "bench/mpi.sh: iolab on MPI ranks vs the limit program (bench/mpi_limit.c)${ior:+ vs IOR}"
else
    echo "bench/mpi.sh: iolab on MPI ranks vs IOR, MPI-IO ($api); the limit program makes POSIX calls only: left out"
fi
echo "machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r); $dir on $(findmnt -n -o FSTYPE,SOURCE -T "$dir" | tr -s ' ')"
echo "MPI: $mpi_version${io:+, MPI-IO component $io (--mca io $io)}; iolab: $("$iolab" --version 2>/dev/null | head -1) ($iolab)"
if [ -n "$ior" ]; then
    echo "IOR: $ior_version, built here from $ior_src against the same Open MPI"
else
    echo "IOR: skipped, no --ior-src PATH given (Debian has no IOR package; its source is github.com/hpc/ior)"
fi
case $api in
posix) calls="pwrite/pread, fdatasync at the end" ;;
mpiio) calls="MPI_File_write_at/read_at, MPI_File_sync at the end" ;;
collective) calls="MPI_File_write_at_all/read_at_all, MPI_File_sync at the end" ;;
esac
if [ $warm = 1 ]; then
    echo "case: $np ranks, one shared file of $np x $size_mib MiB, bs $bs_kib KiB: write ($calls, timed), then a read of what is in memory"
    echo "warm: nothing evicted between the write and the read (iolab read:asis)"
else
    echo "case: $np ranks, one shared file of $np x $size_mib MiB, bs $bs_kib KiB: write ($calls, timed), then a cold read"
    echo "cold: file committed and evicted with posix_fadvise(DONTNEED), checked with mincore (no drop_caches)"
fi
echo "MB/s = 10^6 B/s, every tool by IOR's definition: all bytes over the span from the first open to the last close, commits"
echo "      included (iolab: agg; limit: the same from its ranks' clocks; IOR: its own figure, MiB/s x 1.048576)"
echo "note: buffered I/O on this virtual machine swings up to 5x with the guest's memory state (one tool, consecutive runs):"
echo "      read the spread, not one figure. Before each tool's write, $prime_mib MiB of memory is touched and freed."
echo "runs: a warm-up of each tool, then $n alternations (${tools[*]}, the order rotating)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

for t in "${tools[@]}"; do "run_$t"; done # warm-up, not recorded
: >"$results"
for i in $(seq 0 $((n - 1))); do
    echo "alternation $((i + 1)) of $n (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    for k in $(seq 0 $((${#tools[@]} - 1))); do "run_${tools[$(((i + k) % ${#tools[@]}))]}"; done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
tools = [t for t in ("iolab", "limit", "ior") if any(r[0] == t for r in rows)]
pick = lambda t, p, i: [r[i] for r in rows if r[0] == t and r[1] == p]
v = {(t, p): [float(x) for x in pick(t, p, 2)] for t in tools for p in ("write", "read")}
med = {k: statistics.median(x) for k, x in v.items()}
w = max(30, 13 * len(v["iolab", "write"]))
print(f"{'tool':6} {'phase':6} {'runs: MB/s (load average)':{w}} {'min':>8} {'median':>8} {'max':>8}")
for p in ("write", "read"):
    for t in tools:
        x = v[t, p]
        runs = " ".join(f"{y:.0f} ({l})" for y, l in zip(x, pick(t, p, 6)))
        print(f"{t:6} {p:6} {runs:{w}} {min(x):8.0f} {med[t, p]:8.0f} {max(x):8.0f}")
print()
print(f"{'ratio':12} {'phase':6} {'per alternation':{w}} {'min':>8} {'median':>8} {'max':>8}  of medians")
for p in ("write", "read"):
    for t in tools[1:]:
        r = [a / b for a, b in zip(v["iolab", p], v[t, p])]
        name = "iolab/" + ("IOR" if t == "ior" else t)
        print(f"{name:12} {p:6} {' '.join(f'{y:.3f}' for y in r):{w}} {min(r):8.3f} {statistics.median(r):8.3f} "
              f"{max(r):8.3f}  {med['iolab', p] / med[t, p]:.3f}")
print()
for p in ("write", "read"):
    for i, fig in ((3, "min_SAR (bytes / the slowest rank's time from the barrier)"), (4, "max_SAR (sum of the ranks' rates)")):
        ms = {t: statistics.median(float(x) for x in pick(t, p, i)) for t in ("iolab", "limit") if t in tools}
        print(f"{fig}, median, {p}: " + ", ".join(f"{t} {m:.0f} MB/s" for t, m in ms.items()))
res = {t: [float(x) for x in pick(t, "read", 5)] for t in tools}
print("resident before each read (mincore, fraction of the file; IOR's 1 where not evicted): "
      + "; ".join(f"{t} {max(x):.4f} at most" for t, x in res.items()))
EOF

[ -n "$scale" ] && [ "$api" = posix ] || exit 0 # the scale table is of POSIX runs
echo
echo "scale: 1 MiB per rank, bs 256 KiB, write + cold read, 1 repetition, the store kept (--db in $work)"
echo "rank-0 peak RSS: /usr/bin/time -f %M on rank 0 alone (OMPI_COMM_WORLD_RANK = 0), its maximum resident set"
echo "wall: the whole mpirun (process start-up, MPI_Init ... MPI_Finalize); I/O: the phases' slowest-rank times;"
echo "limit wall: mpi_limit's whole mpirun for the same write and read (MPI start-up and the same barriers and gathers)"
printf '%5s %6s %16s %9s %9s %14s %11s %13s %12s %5s\n' round ranks "rank-0 peak RSS" "wall s" "I/O s" "outside I/O s" "limit wall s" "iolab-limit s" "store bytes" load
scale_iolab() { # scale_iolab RANKS: one iolab run; sets t_iolab (s)
    rm -f "$work"/scale.db*
    local t0=$EPOCHREALTIME
    # shellcheck disable=SC2016
    quiet mpi "$1" sh -c '
        if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then exec /usr/bin/time -f "%M" -o "$0" "$@"; else exec "$@"; fi' \
        "$tmp/rss.txt" "$iolab" run --layout shared --op write,read:cold --size 1MiB --bs 256KiB --reps 1 \
        --dir "$work" --db "$work/scale.db" --json --quiet >"$tmp/scale.json"
    t_iolab=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$EPOCHREALTIME")
}
scale_limit() { # scale_limit RANKS: one limit run; sets t_limit (s)
    rm -f "$work/limit.dat"
    local t0=$EPOCHREALTIME
    quiet mpi "$1" "$limit" "$work/limit.dat" $((1 << 20)) $((256 << 10)) >/dev/null
    t_limit=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$EPOCHREALTIME")
    rm -f "$work/limit.dat"
}
for round in $(seq 1 "$rounds"); do
    for ranks in $scale; do
        # The order swapped each round, so neither tool always runs on the other's leftovers.
        if [ $((round % 2)) = 1 ]; then
            scale_iolab "$ranks"
            scale_limit "$ranks"
        else
            scale_limit "$ranks"
            scale_iolab "$ranks"
        fi
        python3 - "$tmp/scale.json" "$ranks" "$(tail -1 "$tmp/rss.txt")" "$t_iolab" "$t_limit" \
            "$(stat -c %s "$work/scale.db")" "$round" "$(load)" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ranks, rss_kib = int(sys.argv[2]), int(sys.argv[3])
wall, lwall = float(sys.argv[4]), float(sys.argv[5])
store, rnd, load = int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
reps = [r for ph in d["points"][0]["phases"] for r in ph["repetitions"]]
assert all(len(r["workers"]) == ranks for r in reps)
io = sum(r["time_ns"] for r in reps) / 1e9
print(f"{rnd:5} {ranks:6} {rss_kib / 1024:12.1f} MiB {wall:9.2f} {io:9.3f} {wall - io:14.2f} {lwall:11.2f} {wall - lwall:13.2f} {store:12} {load:>5}")
EOF
    done
done
