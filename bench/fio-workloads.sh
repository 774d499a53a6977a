#!/usr/bin/env bash
# iolab and fio side by side on three 4 KiB jobs of one worker (psync, through the page cache,
# each starting cold: iolab's `cold`, fio's invalidate=1), each time-bounded:
#   mixed  random 70/30 reads/writes (fio rw=randrw rwmixread=70; iolab --op rw --rwmixread 70
#          --order random): IOPS of reads, writes and both, and each direction's latency
#          percentiles (p50, p99)
#   zipf   random reads drawn from zipf 1.2 (fio random_distribution=zipf:1.2 norandommap;
#          iolab --order zipf:1.2): IOPS, p50, p99, and iolab's share of the ops on the hottest
#          tenth of the blocks
#   rate   random reads at RATE IOPS (fio rate_iops; iolab --rate-iops): IOPS reached, service
#          time p50/p99/max (fio's completion latency, clat: from the op's issue) and iolab's
#          response time p50/p99/max (from the op's planned start, counting a backlog; fio has
#          none) and late ops
# After one warm-up run of each tool and job (not counted), the tools alternate N times (iolab,
# fio, iolab, fio...); the script prints each figure's runs, min/median/max per tool, and the
# ratio iolab/fio of the medians with the range of the per-alternation ratios. Both write
# non-zero data: iolab its own, fio with refill_buffers (fresh random data each write, the file
# laid out from the same buffers), since a device may detect zeros. Prints the load average at
# the start and the end: the figures mean little on a busy machine. The same seed (1) for both.
#
#   bench/fio-workloads.sh [OPTIONS] [DIR]
#     --size SIZE      the file of each job (default 1GiB; iolab's units, fio gets bytes)
#     --runtime SECS   each run's time (default 10)
#     --rate IOPS      the rate job's IOPS (default 2000)
#     --n N            alternations (default 5)
#     --jobs "J..."    which jobs (default "mixed zipf rate")
#     --iolab PATH     an iolab binary (default $IOLAB; else built with cargo build --release
#                      and taken from $CARGO_TARGET_DIR/release, else target/release)
#     DIR              where the files go (default .)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

dir=. size=1GiB runtime=10 rate=2000 n=5 jobs="mixed zipf rate" iolab=${IOLAB:-}
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (bench/fio-workloads.sh --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
    esac
done
[ "$n" -ge 1 ] || { echo "--n must be at least 1" >&2; exit 2; }
for j in $jobs; do
    case $j in mixed | zipf | rate) ;; *) echo "unknown job $j (mixed, zipf, rate)" >&2; exit 2 ;; esac
done
dir=$(realpath "$dir")

. bench/lib.sh
need_pkg fio fio
need_pkg python3 python3
if [ -z "$iolab" ]; then
    cargo build --release -q
    iolab=${CARGO_TARGET_DIR:-$root/target}/release/iolab
fi
[ -x "$iolab" ] || { echo "no iolab binary at $iolab (--iolab PATH)" >&2; exit 1; }
newer=$(find src Cargo.toml Cargo.lock -newer "$iolab" -print -quit 2>/dev/null || true)
[ -z "$newer" ] || echo "warning: $newer is newer than $iolab: the binary may be stale" >&2
bytes=$("$iolab" plan --size "$size" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["size_bytes"])') ||
    { echo "--size $size: iolab does not take it" >&2; exit 2; }

work=$(mktemp -d "$dir/.fio-workloads.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
results=$work/results.txt
: >"$results"

# iolab_job JOB: its options.
iolab_job() {
    case $1 in
    mixed) echo "--op rw --rwmixread 70 --order random" ;;
    zipf) echo "--op read --order zipf:1.2" ;;
    rate) echo "--op read --order random --rate-iops $rate" ;;
    esac
}
# fio_job JOB: its options.
fio_job() {
    case $1 in
    mixed) echo "--rw=randrw --rwmixread=70" ;;
    zipf) echo "--rw=randread --random_distribution=zipf:1.2 --norandommap" ;;
    rate) echo "--rw=randread --rate_iops=$rate" ;;
    esac
}

# run_iolab JOB ROUND: one run, its figures appended as "JOB iolab ROUND FIGURE VALUE" lines.
run_iolab() {
    local out=$work/iolab.json
    # shellcheck disable=SC2046
    "$iolab" run $(iolab_job "$1") --bs 4KiB --size "$size" --runtime "${runtime}s" --engine psync \
        --seed 1 --reps 1 --no-store --quiet --json --dir "$work" >"$out" ||
        { echo "iolab failed on job $1" >&2; exit 1; }
    python3 - "$1" "$2" "$out" >>"$results" <<'PY'
import json, sys
job, rnd, path = sys.argv[1:]
ph = json.load(open(path))["points"][0]["phases"][0]
r = ph["repetitions"][0]
assert r["status"] == "complete", r["status"]
mix = r.get("mix", {})
f = {"iops": r["ops_per_s"], "again": r.get("again_fraction", 0.0)}
us = lambda lat, p: lat[p] / 1e3
if job == "mixed":
    for d in ("read", "write"):
        f[d + "_iops"] = mix[d]["ops_per_s"]
        f[d + "_p50_us"] = us(mix[d]["latency_ns"], "p50")
        f[d + "_p99_us"] = us(mix[d]["latency_ns"], "p99")
    f["read_share"] = mix["read_share_ops"]
else:
    lat = ph["latency_ns"]  # one repetition: the phase's is the run's (service time)
    f["p50_us"], f["p99_us"], f["max_us"] = us(lat, "p50"), us(lat, "p99"), us(lat, "max")
if job == "zipf":
    f["hot10_share"] = mix["hot10_share_ops"]
if job == "rate":
    resp = mix["response_latency_ns"]
    f["resp_p50_us"], f["resp_p99_us"], f["resp_max_us"] = us(resp, "p50"), us(resp, "p99"), us(resp, "max")
    f["late_ops"] = mix.get("behind", {}).get("late_ops", 0)
for k, v in f.items():
    print(job, "iolab", rnd, k, v)
PY
}

# run_fio JOB ROUND: the same, from fio's JSON (completion latency, clat, is the service time).
run_fio() {
    local out=$work/fio.json
    # shellcheck disable=SC2046
    fio --name="$1" --filename="$work/fio-$1.dat" $(fio_job "$1") --bs=4k --size="$bytes" \
        --ioengine=psync --time_based --runtime="$runtime" --invalidate=1 --refill_buffers=1 \
        --randseed=1 --percentile_list=50:99 --output-format=json >"$out" ||
        { echo "fio failed on job $1" >&2; exit 1; }
    python3 - "$1" "$2" "$out" >>"$results" <<'PY'
import json, sys
job, rnd, path = sys.argv[1:]
j = json.load(open(path))["jobs"][0]
assert j["error"] == 0, j["error"]
us = lambda d, p: d["clat_ns"]["percentile"][p] / 1e3
f = {"iops": j["read"]["iops"] + j["write"]["iops"]}
if job == "mixed":
    for d in ("read", "write"):
        f[d + "_iops"] = j[d]["iops"]
        f[d + "_p50_us"] = us(j[d], "50.000000")
        f[d + "_p99_us"] = us(j[d], "99.000000")
    f["read_share"] = j["read"]["total_ios"] / (j["read"]["total_ios"] + j["write"]["total_ios"])
else:
    r = j["read"]
    f["p50_us"], f["p99_us"], f["max_us"] = us(r, "50.000000"), us(r, "99.000000"), r["clat_ns"]["max"] / 1e3
for k, v in f.items():
    print(job, "fio", rnd, k, v)
PY
}

echo "bench/fio-workloads.sh: iolab ($iolab, $("$iolab" --version)) and $(fio --version)"
echo "jobs: $jobs; 4 KiB, psync, 1 worker, file $size, ${runtime}s a run, rate $rate IOPS; $n alternations after a warm-up; in $dir"
echo "start: $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for job in $jobs; do
    run_iolab "$job" warmup
    run_fio "$job" warmup
    for i in $(seq 1 "$n"); do
        run_iolab "$job" "$i"
        run_fio "$job" "$i"
    done
    rm -f "$work/fio-$job.dat"
done
echo "end:   $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" "$jobs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
rows = [(job, tool, rnd, k, float(v)) for job, tool, rnd, k, v in rows if rnd != "warmup"]
notes = {
    "p50_us": "service time (issue to completion; fio: clat)",
    "max_us": "service time",
    "resp_p50_us": "response time (planned start to completion): iolab only",
    "again": "share of iolab's bytes of blocks already moved in the run (re-read)",
    "hot10_share": "share of the ops on the hottest tenth of the blocks: iolab only",
}
for job in sys.argv[2].split():
    print(f"\n{job}")
    print(f"  {'figure':13} {'tool':5} {'runs':44} {'min':>10} {'median':>10} {'max':>10}")
    figs = list(dict.fromkeys(k for j, _, _, k, _ in rows if j == job))
    for k in figs:
        med = {}
        per = {}
        for tool in ("iolab", "fio"):
            v = [(rnd, x) for j, t, rnd, kk, x in rows if j == job and t == tool and kk == k]
            if not v:
                continue
            per[tool] = dict(v)
            xs = [x for _, x in v]
            med[tool] = statistics.median(xs)
            runs = " ".join(f"{x:.4g}" for x in xs)
            print(f"  {k:13} {tool:5} {runs:44} {min(xs):10.4g} {med[tool]:10.4g} {max(xs):10.4g}")
        if len(med) == 2 and med["fio"] > 0:
            rs = [per["iolab"][r] / per["fio"][r] for r in per["iolab"] if r in per["fio"] and per["fio"][r] > 0]
            span = f" (per alternation {min(rs):.3f}..{max(rs):.3f})" if rs else ""
            print(f"  {k:13} iolab/fio median {med['iolab'] / med['fio']:.3f}{span}")
        if k in notes:
            print(f"  {'':13} ({notes[k]})")
PY
