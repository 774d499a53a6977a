#!/usr/bin/env bash
# 1 GiB sequential write (1 MiB blocks, commit at end with fdatasync), then a cold read of the
# same file, iolab and fio run alternately N times each (default 3), on the file system of DIR.
# Prints each run's MB/s (10^6 B/s) and min/median/max per tool and phase. Before each write,
# 3 GiB of memory is touched and freed (bench/limit.c's `prime`): on a virtual machine, writes
# into the page cache run several times slower into memory freed a while ago than into memory
# just touched, whichever tool writes.
#
#   bench/seq-vs-fio.sh [DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "${1:-.}")
n=${2:-3}
command -v gcc >/dev/null || apt-get install -y -q gcc >/dev/null 2>&1
command -v fio >/dev/null || { apt-get install -y -q fio >/dev/null 2>&1 || { echo "fio is needed" >&2; exit 1; }; }
cargo build --release -q
iolab=target/release/iolab
work=$(mktemp -d "$dir/.seq-vs-fio.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.txt
gcc -O2 -o "$work/limit" bench/limit.c -lpthread
prime() { "$work/limit" prime $((3 << 30)) >/dev/null; }

for i in $(seq 1 "$n"); do
    prime
    # iolab: write with commit at end, then a read verified cold (fadvise DONTNEED + mincore).
    $iolab run --op write,read:cold --size 1GiB --bs 1MiB --sync end --sync-call fdatasync \
        --reps 1 --no-store --quiet --json --dir "$work" |
        python3 -c '
import json, sys
d = json.load(sys.stdin)
for ph in d["points"][0]["phases"]:
    r = ph["repetitions"][0]
    print("iolab", ph["name"].split(":")[0], r["max_sar_bytes_per_s"] / 1e6, r["resident_fraction"])
' >>"$results"
    # fio: the same write (end_fsync counts in its runtime), then a read after fio's own
    # invalidation (posix_fadvise DONTNEED), then remove the file.
    f=$work/fio.dat
    prime
    fio --name=w --filename="$f" --rw=write --bs=1M --size=1G --ioengine=psync --end_fsync=1 \
        --output-format=json | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["write"]
print("fio write", j["bw_bytes"] / 1e6, "-")' >>"$results"
    fio --name=r --filename="$f" --rw=read --bs=1M --size=1G --ioengine=psync --invalidate=1 \
        --output-format=json | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["read"]
print("fio read", j["bw_bytes"] / 1e6, "-")' >>"$results"
    rm -f "$f"
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'tool':6} {'phase':6} {'runs (MB/s)':40} {'min':>8} {'median':>8} {'max':>8}")
med = {}
for tool in ("iolab", "fio"):
    for phase in ("write", "read"):
        v = [float(r[2]) for r in rows if r[0] == tool and r[1] == phase]
        med[tool, phase] = statistics.median(v)
        runs = " ".join(f"{x:.0f}" for x in v)
        print(f"{tool:6} {phase:6} {runs:40} {min(v):8.0f} {statistics.median(v):8.0f} {max(v):8.0f}")
for phase in ("write", "read"):
    print(f"iolab/fio median {phase}: {med['iolab', phase] / med['fio', phase]:.3f}")
res = [r[3] for r in rows if r[0] == "iolab" and r[1] == "read"]
print("iolab cold-read resident fraction before each read:", " ".join(res))
PY
