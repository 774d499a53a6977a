#!/usr/bin/env bash
# iolab against fio with the same engine, run alternately (iolab, fio, iolab, fio, ...), on
# data the page cache holds in full, so the figures measure the tools, not the disk:
#
#   rand4k   4 KiB random reads of a cached 1 GiB file: psync, and io_uring at depth 32;
#            1 and 2 workers (2 workers split the file in two halves, one each)  -> IOPS
#   seq1m    1 MiB sequential reads of a cached 2 GiB file: psync, 1 worker      -> MB/s
#            (fio with --iomem=mmap, so its buffer is as good as iolab's)
#
# Both tools read every block exactly once per run (iolab: a seeded permutation; fio: its
# random map). iolab lays its file out afresh in every run, then runs two warm read phases
# (each preceded by an untimed read, residency checked) and the second one is the figure:
# the first read of a freshly written file also pays for moving its pages to the active LRU
# list, which fio's long-cached file paid long ago. fio's file is laid out once and read once
# (cat) before each fio run, which runs with --invalidate=0. For each case, each tool's figure
# is total ops (or bytes) over the slowest worker's time (iolab's min_SAR; fio's group
# figure), and the ratio iolab/fio is taken per alternation; min/median/max over N
# alternations (default 3). fio runs its jobs as processes (its default); iolab's workers are
# threads of one process, so the 2-worker cases also run fio with --thread ("fio-thr").
#
#   bench/engines.sh [DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "${1:-.}")
n=${2:-3}
[ "$n" -ge 3 ] || { echo "N must be at least 3" >&2; exit 2; }
if ! command -v fio >/dev/null; then
    echo "installing fio (Debian package)" >&2
    { apt-get install -y -q fio || { apt-get update -q && apt-get install -y -q fio; }; } >/dev/null 2>&1 \
        || { echo "fio is needed: apt-get install fio" >&2; exit 1; }
fi
cargo build --release -q
iolab=$PWD/target/release/iolab
work=$(mktemp -d "$dir/.bench-engines.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.txt

# iolab CASE ARGS...: one iolab run, prints "iolab CASE FIGURE RESIDENT".
run_iolab() {
    local case=$1 unit=$2
    shift 2
    "$iolab" run --op read:warm,read:warm --reps 1 --no-store --quiet --json --dir "$work" "$@" |
        python3 -c '
import json, sys
case, unit = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
r = d["points"][0]["phases"][-1]["repetitions"][0]
assert r["status"] == "complete", r
x = r["min_sar_bytes_per_s"]
x = x / d["spec"]["bs_bytes"] if unit == "iops" else x / 1e6
print("iolab", case, x, r["resident_fraction"])' "$case" "$unit" >>"$results"
}

# fio CASE UNIT FILE ARGS...: warms FILE, runs fio, prints "fio CASE FIGURE -" ("fio-thr" when
# ARGS hold --thread).
run_fio() {
    local case=$1 unit=$2 file=$3 tool=fio
    shift 3
    [[ " $* " == *" --thread "* ]] && tool=fio-thr
    cat "$file" >/dev/null
    fio --name=bench --filename="$file" --invalidate=0 --group_reporting --output-format=json "$@" |
        python3 -c '
import json, sys
case, unit, tool = sys.argv[1], sys.argv[2], sys.argv[3]
j = json.load(sys.stdin)["jobs"][0]["read"]
x = j["iops"] if unit == "iops" else j["bw_bytes"] / 1e6
print(tool, case, x, "-")' "$case" "$unit" "$tool" >>"$results"
}

f1=$work/fio-1g.dat
f2=$work/fio-2g.dat
# Each file is written with its case's block size, as iolab lays its files out in bs-sized
# writes: the page cache may hold a file in larger folios when it was written in larger
# writes, which makes later cached reads cheaper, so both tools' files get the same treatment.
fio --name=layout --filename="$f1" --rw=write --bs=4k --size=1G --end_fsync=1 --output-format=terse >/dev/null
fio --name=layout --filename="$f2" --rw=write --bs=1M --size=2G --end_fsync=1 --output-format=terse >/dev/null

for i in $(seq 1 "$n"); do
    echo "alternation $i of $n" >&2
    for w in 1 2; do
        size=$((1024 / w))M
        run_iolab "psync-rand4k-w$w" iops --engine psync --bs 4KiB --order random --layout shared \
            --workers "$w" --size "${size}iB"
        psync=(--ioengine=psync --rw=randread --bs=4k --numjobs="$w" --size="$size" --offset_increment="$size")
        run_fio "psync-rand4k-w$w" iops "$f1" "${psync[@]}"
        [ "$w" = 1 ] || run_fio "psync-rand4k-w$w" iops "$f1" "${psync[@]}" --thread
        run_iolab "uring32-rand4k-w$w" iops --engine uring --iodepth 32 --bs 4KiB --order random \
            --layout shared --workers "$w" --size "${size}iB"
        uring=(--ioengine=io_uring --iodepth=32 --fixedbufs=1 --registerfiles=1 --iodepth_batch_submit=32
            --iodepth_batch_complete_max=32 --rw=randread --bs=4k --numjobs="$w" --size="$size"
            --offset_increment="$size")
        run_fio "uring32-rand4k-w$w" iops "$f1" "${uring[@]}"
        [ "$w" = 1 ] || run_fio "uring32-rand4k-w$w" iops "$f1" "${uring[@]}" --thread
    done
    run_iolab "psync-seq1m" mbps --engine psync --bs 1MiB --order seq --size 2GiB
    run_fio "psync-seq1m" mbps "$f2" --ioengine=psync --rw=read --bs=1M --size=2G --iomem=mmap
done

python3 - "$results" "$n" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
cases = []
for r in rows:
    if r[1] not in cases:
        cases.append(r[1])
print(f"{'case':22} {'unit':5} {'tool':8} {'runs':42} {'min':>9} {'median':>9} {'max':>9}")
for case in cases:
    unit = "MB/s" if "seq" in case else "IOPS"
    tools = [t for t in ("iolab", "fio", "fio-thr") if any(r[0] == t and r[1] == case for r in rows)]
    v = {t: [float(r[2]) for r in rows if r[0] == t and r[1] == case] for t in tools}
    for t in tools:
        xs = v[t]
        runs = " ".join(f"{x:.0f}" for x in xs)
        print(f"{case:22} {unit:5} {t:8} {runs:42} {min(xs):9.0f} {statistics.median(xs):9.0f} {max(xs):9.0f}")
    for t in tools[1:]:
        ratios = [a / b for a, b in zip(v["iolab"], v[t])]
        name = "/" + t
        print(f"{case:22} {'':5} {name:8} {' '.join(f'{x:.3f}' for x in ratios):42} "
              f"{min(ratios):9.3f} {statistics.median(ratios):9.3f} {max(ratios):9.3f}")
print()
for case in cases:
    best = max(float(r[2]) for r in rows if r[0].startswith("fio") and r[1] == case)
    med = statistics.median(float(r[2]) for r in rows if r[0] == "iolab" and r[1] == case)
    print(f"{case:22} iolab median / best fio run: {med / best:.3f}")
res = [r[3] for r in rows if r[0] == "iolab"]
print("iolab resident fraction before each timed read:", " ".join(f"{float(x):.3f}" for x in res))
PY
