#!/usr/bin/env bash
# Quick runs of two study experiments, printed as tables of the mean (over repetitions) of
# the average individual rate, max_SAR and min_SAR, in MB/s:
#   R4 (Russell 1998): 12 files of 16 MiB written with 1-way (one worker, one file after
#      another) and 4-way interleaving (four workers at once), every 16 KiB write committed
#      so the file system allocates blocks in write order; then read cold by 1..4 process
#      workers, each reading its own files one after another.
#   C3 (French, Pratt, Das 1991): 1..8 process workers on one 210 MiB file striped over 4
#      target dirs in 4 KiB units, 16 KiB buffers, each worker a contiguous part.
# Usage: bench/r4_c3.sh [DIR] [REPS]  (DIR: where the data goes; default a temp dir here)
set -euo pipefail
cd "$(dirname "$0")/.."
IOLAB=${IOLAB:-target/release/iolab}
DIR=${1:-$(mktemp -d -p target)}
mkdir -p "$DIR"
REPS=${2:-3}
DB="$DIR/bench.db"
export IOLAB_DB="$DB"

summ() { # summ JSON: one row per phase
    python3 -c '
import json, sys
d = json.load(sys.stdin)
label = sys.argv[1]
for ph in d["points"][0]["phases"]:
    reps = [r for r in ph["repetitions"] if r["status"] == "complete"]
    m = lambda k: sum(r[k] for r in reps) / len(reps) / 1e6
    lay = ""
    fl = [r.get("file_layout") for r in reps if r.get("file_layout")]
    if fl:
        lay = "fragments %.0f, alternations %.0f of %.0f" % (
            sum(f["fragments"] for f in fl) / len(fl), sum(f["alternations"] for f in fl) / len(fl),
            sum(f["boundaries"] for f in fl) / len(fl))
    print("| %s | %s | %d | %.1f | %.1f | %.1f | %s |" % (label, ph["name"], len(reps),
          m("avg_individual_bytes_per_s"), m("max_sar_bytes_per_s"), m("min_sar_bytes_per_s"), lay))
' "$1"
}

echo "## R4: readers over files written with 1- and 4-way interleaving (16 KiB blocks)"
echo "| written | phase | reps | individual | max_SAR | min_SAR | layout after writing |"
echo "|---|---|---|---|---|---|---|"
for k in 1 4; do
    "$IOLAB" run --json --quiet --dir "$DIR" --files 12 --size 16MiB --bs 16KiB --sync each \
        --launcher process --reps "$REPS" --name "r4-write-$k-way" \
        --op "write:workers=$k,read:workers=1:cold,read:workers=2:cold,read:workers=3:cold,read:workers=4:cold" \
        | summ "$k-way"
done

echo
echo "## C3: workers on one file striped over 4 targets (4 KiB unit, 16 KiB buffers, 210 MiB)"
echo "| workers | phase | reps | individual | max_SAR | min_SAR | layout after writing |"
echo "|---|---|---|---|---|---|---|"
T="$DIR/t0,$DIR/t1,$DIR/t2,$DIR/t3"
mkdir -p "$DIR/t0" "$DIR/t1" "$DIR/t2" "$DIR/t3"
for w in 1 2 3 4 5 6 7 8; do
    per=$((13440 / w * 16))
    "$IOLAB" run --json --quiet --layout striped --targets "$T" --stripe-unit 4KiB --bs 16KiB \
        --size "${per}KiB" --workers "$w" --launcher process --reps "$REPS" --name "c3-$w" \
        --op write,read:cold | summ "$w"
done
echo
echo "rates in MB/s (10^6 B/s): individual = mean r_i, max_SAR = sum r_i, min_SAR = bytes / max t_i"
echo "store: $DB"
