#!/usr/bin/env bash
# The memory an import takes at its caps: an experiment's JSON just under the 256 MiB cap,
# and another store whose one experiment holds close to (about 176,000 of) the 200,000 worker
# rows an import reads in one. Both are made from one real run (null engine, 64 workers) by repeating its
# repetitions, so every figure agrees with its raw fields. Prints the input's size, the
# import's time and its peak resident memory (GNU time's %M), ROUNDS times (default 2).
# Usage: bench/import.sh [DIR]   (needs python3 and /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
B=$PWD/target/release/iolab
DIR="${1:-$(mktemp -d)}"
ROUNDS="${ROUNDS:-2}"
export IOLAB_DB="$DIR/seed.db"
"$B" run -q --json --engine null --workers 64 --size 16KiB --bs 4KiB --reps 1 --op write,read \
    --dir "$DIR" >"$DIR/one.json"
# Repetitions copied with new run ids until the document nears TARGET bytes.
grow() { # grow TARGET OUT
    python3 - "$DIR/one.json" "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
target, out = int(sys.argv[2]), sys.argv[3]
one = len(json.dumps(doc))
per = one  # a run's share is close to the whole document's with one run
k = max(1, int(target / per * 0.97))
for ph in doc["points"][0]["phases"]:
    rep = ph["repetitions"][0]
    ph["repetitions"] = []
    for i in range(k):
        r = dict(rep)
        r["rep"] = i
        r["run_id"] = "%032x" % (i + 1)
        ph["repetitions"].append(r)
doc["experiment_id"] = "20200101-000000-b16b16"
json.dump(doc, open(out, "w"))
PY
}
grow $((250 << 20)) "$DIR/big.json"
# About 176,000 worker rows: a store whose one experiment is under the 200,000 an import holds.
grow $((80 << 20)) "$DIR/mid.json"
rm -f "$DIR"/mid.db*
"$B" results import "$DIR/mid.json" --db "$DIR/mid.db" >/dev/null
printf "%-28s %10s %8s %10s\n" input bytes time_s max_rss_MiB
for r in $(seq "$ROUNDS"); do
    rm -f "$DIR"/into.db*
    /usr/bin/time -f "%e %M" -o "$DIR/t" "$B" results import "$DIR/big.json" --db "$DIR/into.db" >/dev/null
    read -r secs kb <"$DIR/t"
    printf "%-28s %10s %8s %10s\n" "json ($(python3 -c "import json;d=json.load(open('$DIR/big.json'));print(sum(len(p['repetitions'])*len(p['repetitions'][0]['workers']) for p in d['points'][0]['phases']))") workers)" \
        "$(stat -c %s "$DIR/big.json")" "$secs" $((kb / 1024))
    rm -f "$DIR"/copy.db*
    /usr/bin/time -f "%e %M" -o "$DIR/t" "$B" results import "$DIR/mid.db" --db "$DIR/copy.db" >/dev/null
    read -r secs kb <"$DIR/t"
    printf "%-28s %10s %8s %10s\n" "store ($(sqlite3 "$DIR/mid.db" 'SELECT count(*) FROM worker_results' 2>/dev/null || echo '~176000') workers)" \
        "$(stat -c %s "$DIR/mid.db")" "$secs" $((kb / 1024))
done
