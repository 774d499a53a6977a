#!/usr/bin/env bash
# The cost of verification: cached writes and warm (page cache) reads of 1 GiB in 1 MiB and
# 64 KiB blocks, with and without --verify, alternated ROUNDS times (default 3). Prints the
# median max_SAR of each run in MB/s and the ratio verify/plain. Memory-bound on purpose: this
# is where an extra pass over every block shows most; on a device it hides behind the I/O.
# Usage: bench/verify.sh [DIR]   (needs jq)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
B=$PWD/target/release/iolab
DIR="${1:-$(mktemp -d)}"
ROUNDS="${ROUNDS:-3}"
rate() { # rate BS PHASE-INDEX [--verify]
    "$B" run -q --no-store --json --dir "$DIR" --op write:asis,read:warm --sync none \
        --size 1GiB --bs "$1" --reps 3 ${3:-} |
        jq -r ".points[0].phases[$2].summary.median / 1e6 | floor"
}
cargo test --release -q --test it verify::checksum_throughput -- --ignored --nocapture 2>/dev/null | grep xxh64
printf "%-8s %-6s %10s %10s %7s\n" bs phase plain verify ratio
for bs in 1MiB 64KiB; do
    for phase in 0 1; do
        for r in $(seq "$ROUNDS"); do
            a=$(rate "$bs" "$phase")
            b=$(rate "$bs" "$phase" --verify)
            name=$([ "$phase" = 0 ] && echo write || echo read)
            printf "%-8s %-6s %10s %10s %7.2f\n" "$bs" "$name" "$a" "$b" "$(echo "$b / $a" | bc -l)"
        done
    done
done
