#!/usr/bin/env bash
# iolab's own cost: iolab against the physical limit of its hot loop (bench/limit.c: the same
# system calls over the same offsets, nothing else) and against fio, run alternately
# (iolab, limit, fio, iolab, limit, fio, ...) N times, with min/median/max per tool and the
# ratios iolab/limit and iolab/fio taken per alternation.
#
#   (a) rand4k  4 KiB random reads of a cached 1 GiB file: psync and io_uring at depth 32;
#               1 and 2 workers (2 workers: one half each); iolab with latency histograms
#               (the default) and with `--latency off`                              -> IOPS
#   (b) seq1m   1 MiB sequential reads of a cached 2 GiB file, psync, 1 worker      -> MB/s
#   (c) tiny    a 4 KiB job start to finish: write 4 KiB, commit, read it back      -> ms, MiB
#               (wall time and peak RSS, /usr/bin/time)
#   (d) write1m 1 MiB sequential writes of 2 GiB, commit at end (device-bound)     -> MB/s
#
# Every tool reads the very same cached files: iolab writes them once (`--keep`) and each
# iolab run reads them again (`--reuse`); the limit program and fio read those files too. Each
# timed read is preceded by a full untimed read of its file (iolab's `read:warm` does it and
# checks residency; the limit program does the same; fio's --pre_read=1). Each tool's figure is total ops (or bytes) over the
# slowest worker's time (iolab's min_SAR; fio's group figure).
#
#   bench/overhead.sh [DIR] [N]      DIR: where files go (default .); N >= 5 (default 5)
#   OVERHEAD_CASES="a b c d"         the cases to run (default all)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$(realpath "${1:-.}")
n=${2:-5}
cases=${OVERHEAD_CASES:-a b c d}
[ "$n" -ge 5 ] || { echo "N must be at least 5" >&2; exit 2; }

. bench/lib.sh
need_pkg fio fio
need_pkg gcc gcc
need_pkg python3 python3
[ -x /usr/bin/time ] || need_pkg /usr/bin/time time

cargo build --release -q
iolab=$root/target/release/iolab
work=$(mktemp -d "$dir/.bench-overhead.XXXXXX")
trap 'rc=$?; [ "$rc" = 0 ] || tail -20 "$work/iolab.err" >&2 2>/dev/null; rm -rf "$work"' EXIT
limit=$work/limit
gcc -O2 -Wall -o "$limit" bench/limit.c -lpthread
results=$work/results.txt
export IOLAB_DB=$work/store.db

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$work/load.txt" >&2

# Figures go to $results as "TOOL CASE VALUE". Each tool's output goes to a file that is parsed
# once the tool has exited: a parser started alongside it (a pipe) would take CPU from the
# measurement while Python starts, which costs a tool that starts timing at once (the limit
# program) more than one that first opens and warms its files (iolab).
out=$work/out.txt
record() { echo "$1 $2 $3" >>"$results"; }

# The run id of a kept iolab data set: writes it once.
keep() { # keep SIZE BS -> run id
    "$iolab" run --op write --keep --layout shared --size "$1" --bs "$2" --reps 1 --no-store --quiet \
        --json --dir "$work" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["points"][0]["phases"][0]["repetitions"][0]["run_id"])'
}

# iolab_read CASE UNIT RUNID ARGS...: one iolab run over a kept data set.
iolab_read() {
    local case=$1 unit=$2 id=$3
    shift 3
    "$iolab" run --reuse "$id" --layout shared --op read:warm --reps 1 --no-store --quiet --json --dir "$work" "$@" \
        2>>"$work/iolab.err" >"$out"
    python3 <"$out" -c '
import json, sys
unit = sys.argv[1]
d = json.load(sys.stdin)
r = d["points"][0]["phases"][-1]["repetitions"][0]
assert r["status"] == "complete", r
with open(sys.argv[2], "a") as f:
    print(r["resident_fraction"], file=f)
x = r["min_sar_bytes_per_s"]
print(x / d["spec"]["bs_bytes"] if unit == "iops" else x / 1e6)' "$unit" "$work/resident.txt" | { read -r v; record "${TOOL:-iolab}" "$case" "$v"; }
}

# limit_run CASE UNIT FILE ARGS...: the limit program (it reads FILE once first, untimed).
limit_run() {
    local case=$1 unit=$2 file=$3
    shift 3
    "$limit" "$1" "$file" "${@:2}" >"$out"
    python3 <"$out" -c '
import sys
f = sys.stdin.read().split()
v = dict(zip(f[::2], f[1::2]))
print(v["ops_per_s"] if sys.argv[1] == "iops" else float(v["bytes_per_s"]) / 1e6)' "$unit" | { read -r v; record limit "$case" "$v"; }
}

# fio_run CASE UNIT FILE ARGS...: fio over FILE (for reads, --pre_read=1: read once first,
# untimed, in fio's own process).
fio_run() {
    local case=$1 unit=$2 file=$3 rw=read
    shift 3
    local pre=(--pre_read=1)
    [[ " $* " == *" --rw=write "* ]] && { rw=write; pre=(); }
    fio --name=bench "${pre[@]}" --filename="$file" --invalidate=0 --group_reporting --output-format=json "$@" >"$out"
    python3 <"$out" -c '
import json, sys
unit, rw = sys.argv[1], sys.argv[2]
j = json.load(sys.stdin)["jobs"][0][rw]
print(j["iops"] if unit == "iops" else j["bw_bytes"] / 1e6)' "$unit" "$rw" | { read -r v; record fio "$case" "$v"; }
}

# tiny CMD...: wall ms and peak RSS MiB of one command, recorded as TOOL tiny-ms / tiny-rss.
tiny() {
    local tool=$1
    shift
    local t0=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$work/rss.txt" "$@" >/dev/null 2>"$work/tiny.err" || { cat "$work/tiny.err" >&2; exit 1; }
    local t1=$EPOCHREALTIME
    record "$tool" tiny-ms "$(python3 -c "print(($t1 - $t0) * 1e3)")"
    record "$tool" tiny-rss "$(python3 -c "print($(tail -1 "$work/rss.txt") / 1024)")"
}

has() { [[ " $cases " == *" $1 "* ]]; }

if has a; then
    id1=$(keep 1GiB 4KiB)
    f1=$work/.iolab-$id1/shared.dat
    # The limit program's offsets must be iolab's: compare them on a small traced run.
    "$iolab" run --layout shared --workers 2 --size 512KiB --bs 4KiB --order random --op read \
        --latency trace --reps 1 --quiet --dir "$work" >/dev/null
    "$iolab" results trace last | awk -F, 'NR > 1 { print $5, $6, $8 }' >"$work/iolab-offsets.txt"
    "$limit" print - 4096 $((1024 * 1024)) 2 random >"$work/limit-offsets.txt"
    cmp -s "$work/iolab-offsets.txt" "$work/limit-offsets.txt" ||
        { echo "the limit program's offsets differ from iolab's" >&2; exit 1; }
fi
if has b; then
    id2=$(keep 2GiB 1MiB)
    f2=$work/.iolab-$id2/shared.dat
fi
fw=$work/fio-write.dat

# Warm-up: one untimed round of each read case.
if has a; then
    "$iolab" run --reuse "$id1" --layout shared --op read:warm --reps 1 --no-store --quiet --bs 4KiB --order random \
        --size 1GiB --dir "$work" >/dev/null
    "$limit" pread "$f1" 4096 $((1 << 30)) 1 random >/dev/null
fi

# rotated I CMD...: runs the commands (each a string of words) starting with the (I mod N)-th,
# so no tool always runs right after the same other one.
rotated() {
    local i=$1
    shift
    local cmds=("$@") k
    for k in $(seq 0 $((${#cmds[@]} - 1))); do
        eval "${cmds[$(((i + k) % ${#cmds[@]}))]}"
    done
}

# Device-bound writes: 2 GiB in 1 MiB writes, one commit at the end. Before each, 3 GiB of
# memory is touched and freed (the limit program's `prime`), so each tool's page cache comes
# from memory in the same state.
write_iolab() {
    "$limit" prime $((3 << 30))
    "$iolab" run --op write --size 2GiB --bs 1MiB --sync end --reps 1 --no-store --quiet --json --dir "$work/tiny" >"$out"
    python3 <"$out" -c '
import json, sys
r = json.load(sys.stdin)["points"][0]["phases"][0]["repetitions"][0]
assert r["status"] == "complete", r
print(r["min_sar_bytes_per_s"] / 1e6)' | { read -r v; record iolab write1m "$v"; }
}
write_limit() {
    "$limit" prime $((3 << 30))
    "$limit" pwrite "$fw" $((1 << 20)) $((2 << 30)) 1 seq >"$out"
    python3 <"$out" -c '
import sys
f = sys.stdin.read().split()
print(float(dict(zip(f[::2], f[1::2]))["bytes_per_s"]) / 1e6)' | { read -r v; record limit write1m "$v"; }
    rm -f "$fw"
}
write_fio() {
    "$limit" prime $((3 << 30))
    fio_run write1m mbps "$fw" --ioengine=psync --rw=write --bs=1M --size=2G --end_fsync=1 --fallocate=none
    rm -f "$fw"
}

mkdir -p "$work/tiny"
for i in $(seq 1 "$n"); do
    echo "alternation $i of $n (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    if has a; then
        for w in 1 2; do
            size=$((1024 / w))MiB
            common=(--bs 4KiB --order random --workers "$w" --size "$size")
            fio_common=(--rw=randread --bs=4k --numjobs="$w" --size=$((1024 / w))M --offset_increment=$((1024 / w))M)
            rotated "$i" \
                "iolab_read psync-w$w iops $id1 --engine psync ${common[*]}" \
                "TOOL=iolab-off iolab_read psync-w$w iops $id1 --engine psync --latency off ${common[*]}" \
                "limit_run psync-w$w iops $f1 pread 4096 $((1 << 30)) $w random" \
                "fio_run psync-w$w iops $f1 --ioengine=psync ${fio_common[*]}"
            rotated "$i" \
                "iolab_read uring32-w$w iops $id1 --engine uring --iodepth 32 ${common[*]}" \
                "TOOL=iolab-off iolab_read uring32-w$w iops $id1 --engine uring --iodepth 32 --latency off ${common[*]}" \
                "limit_run uring32-w$w iops $f1 uring 4096 $((1 << 30)) $w random 32" \
                "fio_run uring32-w$w iops $f1 --ioengine=io_uring --iodepth=32 --fixedbufs=1 --registerfiles=1 --iodepth_batch_submit=32 --iodepth_batch_complete_max=32 ${fio_common[*]}"
        done
    fi
    if has b; then
        rotated "$i" \
            "iolab_read seq1m mbps $id2 --engine psync --bs 1MiB --order seq --size 2GiB" \
            "limit_run seq1m mbps $f2 pread $((1 << 20)) $((2 << 30)) 1 seq" \
            "fio_run seq1m mbps $f2 --ioengine=psync --rw=read --bs=1M --size=2G --iomem=mmap"
    fi
    if has c; then
        tiny iolab "$iolab" run --size 4KiB --bs 4KiB --op write,read --reps 1 --quiet --dir "$work/tiny"
        tiny iolab-nostore "$iolab" run --size 4KiB --bs 4KiB --op write,read --reps 1 --quiet --no-store \
            --dir "$work/tiny"
        rm -f "$work/tiny.dat"
        tiny limit "$limit" pwrite "$work/tiny.dat" 4096 4096 1 seq
        rm -f "$work/tiny.dat"
        tiny fio fio --name=w --filename="$work/tiny.dat" --size=4k --bs=4k --rw=write --end_fsync=1 \
            --fallocate=none --name=r --stonewall --filename="$work/tiny.dat" --size=4k --bs=4k --rw=read
    fi
    if has d; then
        rotated "$i" write_iolab write_limit write_fio
    fi
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$work/load.txt" >&2

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
cases = []
for r in rows:
    if r[1] not in cases:
        cases.append(r[1])
units = {"tiny-ms": "ms", "tiny-rss": "MiB", "seq1m": "MB/s", "write1m": "MB/s"}
order = ["iolab", "iolab-off", "iolab-nostore", "limit", "fio"]
print(f"{'case':14} {'unit':5} {'tool':14} {'runs':50} {'min':>9} {'median':>9} {'max':>9}")
for case in cases:
    unit = units.get(case, "IOPS")
    tools = [t for t in order if any(r[0] == t and r[1] == case for r in rows)]
    v = {t: [float(r[2]) for r in rows if r[0] == t and r[1] == case] for t in tools}
    fmt = (lambda x: f"{x:.1f}") if unit in ("ms", "MiB") else (lambda x: f"{x:.0f}")
    for t in tools:
        xs = v[t]
        print(f"{case:14} {unit:5} {t:14} {' '.join(fmt(x) for x in xs):50} "
              f"{fmt(min(xs)):>9} {fmt(statistics.median(xs)):>9} {fmt(max(xs)):>9}")
    if unit in ("ms", "MiB"):
        continue
    for a in [t for t in ("iolab", "iolab-off") if t in tools]:
        for b in [t for t in ("limit", "fio") if t in tools]:
            ratios = [x / y for x, y in zip(v[a], v[b])]
            name = f"{a}/{b}"
            best = max(v[a]) / max(v[b])
            print(f"{case:14} {'':5} {name:14} {' '.join(f'{x:.3f}' for x in ratios):50} "
                  f"{min(ratios):9.3f} {statistics.median(ratios):9.3f} {max(ratios):9.3f}  best/best {best:.3f}")
PY
cat "$work/load.txt"
[ -s "$work/resident.txt" ] && echo "iolab's resident fraction before its timed reads: $(sort -g "$work/resident.txt" | head -1) at least" || true
