#!/usr/bin/env bash
# I/O-server ranks, serial against parallel fan-out: one client rank reads and writes a file
# striped over S server ranks (16 KiB stripe unit, 128 KiB blocks: 8 pieces a block) with the
# pieces of each block sent one after another (--fanout serial) or all at once (--fanout
# parallel, --server-depth requests in flight per server), on the disk store and on the
# memory store (the protocol alone). The two modes alternate N times; per store, phase and
# mode: min/median/max MB/s (10^6 B/s) of max_SAR over every repetition.
#
#   bench/servers.sh [--n N] [--servers S] [--depth D] [--size SIZE] [--iolab PATH] [DIR]
#     --n N          alternations (default 5; each run is 3 repetitions)
#     --servers S    server ranks (default 2; the run takes S + 1 ranks, oversubscribed)
#     --depth D      requests in flight per server with parallel fan-out (default 4)
#     --size SIZE    the file (default 32MiB)
#     --iolab PATH   the binary (default $IOLAB, else $CARGO_TARGET_DIR/release/iolab, else
#                    target/release/iolab), built with --features mpi against Open MPI
#     DIR            the servers' directory (default .)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
n=5 servers=2 depth=4 size=32MiB dir=.
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --n) n=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --iolab) iolab=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) dir=$1; shift ;;
    esac
done
dir=$(cd "$dir" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for store in disk memory; do
    for i in $(seq 1 "$n"); do
        for f in serial parallel; do
            timeout 600 mpirun --oversubscribe -np $((servers + 1)) "$iolab" run --servers "$servers" \
                --server-store $store --server-dir "$dir" --layout striped --stripe-unit 16KiB --bs 128KiB \
                --size "$size" --fanout $f --server-depth "$depth" --op write,read:cold --reps 3 --json \
                --quiet --no-store --dir "$dir" >"$out/$store-$f-$i.json"
        done
    done
done
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
print(f"{'store':7} {'phase':10} {'fan-out':9} {'runs':>4} {'min':>8} {'median':>8} {'max':>8}  MB/s of max_SAR")
for store in ("disk", "memory"):
    for ph in (0, 1):
        for f in ("serial", "parallel"):
            xs, name = [], ""
            for fn in sorted(glob.glob(f"{out}/{store}-{f}-*.json")):
                p = json.load(open(fn))["points"][0]["phases"][ph]
                name = p["name"]
                xs += [r["max_sar_bytes_per_s"] / 1e6 for r in p["repetitions"] if r["status"] == "complete"]
            print(f"{store:7} {name:10} {f:9} {len(xs):4} {min(xs):8.1f} {statistics.median(xs):8.1f} {max(xs):8.1f}")
PY
