#!/usr/bin/env bash
# Rank 0's work past the gather at many workers: a phase's repetition made from its workers'
# samples, its workers spooled and its rows written to the store from the spool (the ignored
# test store::write::tests::rows_of_many_workers), ROUNDS times (default 5); prints each round
# (its times; the bytes the samples, the making and the kept repetition held, as the tests'
# allocator counts them; the spool's bytes per worker; the most a whole run of five
# repetitions of a write and a read held) and min/median/max of the time per worker. Usage: bench/rows.sh [WORKERS]   (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
export IOLAB_ROWS="${1:-100000}"
ROUNDS="${ROUNDS:-5}"
run() { cargo test --release -q --lib store::write::tests::rows_of_many_workers -- --ignored --nocapture 2>/dev/null | grep -E '^(rows|memory|spool|run):'; }
run >/dev/null # build and warm up
for r in $(seq "$ROUNDS"); do run; done | tee /dev/stderr | grep '^rows:' |
    sed -E 's/.*\(([0-9.]+) us per worker.*/\1/' | sort -n |
    awk '{v[NR] = $1} END {printf "us per worker: min %.2f  median %.2f  max %.2f  (%d rounds)\n", v[1], v[int((NR + 1) / 2)], v[NR], NR}'
