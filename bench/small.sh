#!/usr/bin/env bash
# What a small job costs from start to end: `iolab run --op write,read --size 4KiB --bs 4KiB
# --no-store` with five repetitions, against the same job done by the limit program
# (bench/limit.c: per repetition one process writes the 4 KiB and commits them with fdatasync,
# another reads them back; nothing else) and by fio (one fio process, per repetition a write job
# with --end_fsync=1 and a read job after it, fio's default --invalidate=1 dropping the file's
# pages first as iolab's cold read does). The three run alternately (iolab, limit, fio, ...,
# the order rotating at each alternation) N times after one untimed warm-up round; the wall
# time of each (bash's EPOCHREALTIME around the command) is printed per run with
# min/median/max in ms, and iolab/limit and iolab/fio per alternation. Sweeps of many small points, metadata phases and tune races pay
# this cost per run.
#
# Then, if strace is installed, the system calls of one iolab job (strace -f -c): opens,
# stats, reads and commits, the figures docs/performance.md keeps beside the times.
#
#   bench/small.sh [DIR] [N]    DIR: where files go (default .); N >= 5 (default 15)
#   IOLAB=PATH                  the iolab binary to time (default: cargo build --release)
#   IOLAB_BASE=PATH             an earlier iolab binary, timed too (as iolab-base), alternately
#   SMALL_REPS=5                repetitions per job
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$(realpath "${1:-.}")
n=${2:-15}
reps=${SMALL_REPS:-5}
[ "$n" -ge 5 ] || { echo "N must be at least 5" >&2; exit 2; }

. bench/lib.sh
need_pkg fio fio
need_pkg gcc gcc
need_pkg python3 python3

if [ -z "${IOLAB:-}" ]; then
    cargo build --release -q
    iolab=$root/target/release/iolab
else
    iolab=$(realpath "$IOLAB")
fi
tools=(iolab limit fio)
if [ -n "${IOLAB_BASE:-}" ]; then
    base=$(realpath "$IOLAB_BASE")
    tools=(iolab iolab-base limit fio)
fi
work=$(mktemp -d "$dir/.bench-small.XXXXXX")
trap 'rm -rf "$work"' EXIT
limit=$work/limit
gcc -O2 -Wall -o "$limit" bench/limit.c -lpthread
mkdir -p "$work/iolab"
results=$work/results.txt

# The fio job: per repetition a write job and a read job, each after the one before.
{
    echo "[global]"
    echo "filename=$work/fio.dat"
    echo "size=4k"
    echo "bs=4k"
    echo "ioengine=psync"
    echo "stonewall"
    for r in $(seq 1 "$reps"); do
        printf '[w%s]\nrw=write\nend_fsync=1\n[r%s]\nrw=read\n' "$r" "$r"
    done
} >"$work/job.fio"

run_iolab() {
    "$iolab" run --op write,read --size 4KiB --bs 4KiB --reps "$reps" --no-store --quiet --dir "$work/iolab"
}
run_iolab-base() {
    "$base" run --op write,read --size 4KiB --bs 4KiB --reps "$reps" --no-store --quiet --dir "$work/iolab"
}
run_limit() {
    local r
    for r in $(seq 1 "$reps"); do
        "$limit" pwrite "$work/limit.dat" 4096 4096 1 seq
        "$limit" pread "$work/limit.dat" 4096 4096 1 seq
    done
}
run_fio() {
    fio --output-format=terse "$work/job.fio"
}

# timed TOOL: one run of run_TOOL, its wall ms recorded as "TOOL MS".
timed() {
    local t0 t1
    t0=$EPOCHREALTIME
    "run_$1" >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
    t1=$EPOCHREALTIME
    echo "$1 $(((${t1/./} - ${t0/./}) / 1000)).$(((${t1/./} - ${t0/./}) % 1000 / 100))" >>"$results"
}

echo "iolab: $iolab ($("$iolab" --version))${base:+; iolab-base: $base}" >&2
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$work/load.txt" >&2
for tool in "${tools[@]}"; do "run_$tool" >/dev/null 2>&1; done # warm-up: caches, page tables
for i in $(seq 0 $((n - 1))); do
    # The order rotates at each alternation, so no tool always follows the same other one.
    for k in $(seq 0 $((${#tools[@]} - 1))); do timed "${tools[$(((i + k) % ${#tools[@]}))]}"; done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$work/load.txt" >&2

python3 - "$results" "$reps" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
reps = sys.argv[2]
v = {}
for t, ms in rows:
    v.setdefault(t, []).append(float(ms))
print(f"a 4 KiB write,read job, {reps} repetitions, wall ms per job")
print(f"{'tool':12} {'min':>7} {'median':>7} {'max':>7}  runs")
for t in [t for t in ("iolab", "iolab-base", "limit", "fio") if t in v]:
    xs = v[t]
    print(f"{t:12} {min(xs):7.1f} {statistics.median(xs):7.1f} {max(xs):7.1f}  {' '.join(f'{x:.1f}' for x in xs)}")
for b in [t for t in ("iolab-base", "limit", "fio") if t in v]:
    r = [x / y for x, y in zip(v["iolab"], v[b])]
    print(f"{'iolab/' + b:12} {min(r):7.2f} {statistics.median(r):7.2f} {max(r):7.2f}")
PY

if command -v strace >/dev/null 2>&1; then
    strace -f -c -o "$work/strace.txt" "$iolab" run --op write,read --size 4KiB --bs 4KiB --reps "$reps" \
        --no-store --quiet --dir "$work/iolab" >/dev/null 2>&1
    python3 - "$work/strace.txt" <<'PY'
import sys
calls = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[3].isdigit() and f[-1] != "total":
        calls[f[-1]] = int(f[3])
names = ["openat", "statx", "newfstatat", "read", "syncfs", "fsync", "fdatasync"]
print("iolab's system calls for one job (strace -f -c): " + ", ".join(f"{calls.get(n, 0)} {n}" for n in names)
      + f"; {sum(calls.values())} in all")
PY
fi
