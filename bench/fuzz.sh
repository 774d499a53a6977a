#!/usr/bin/env bash
# Fuzzes the spec parser (TOML, --set, command-line flags, resolution), the units parser and the
# work-directory marker parser with IOLAB_FUZZ_CASES cases of each (default one million).
# Any panic fails with the smallest input that triggers it. CI runs fewer
# (1,000 cases of each: tests/it/fuzz.rs, `parsers_never_panic`).
set -euo pipefail
cd "$(dirname "$0")/.."
export IOLAB_FUZZ_CASES="${IOLAB_FUZZ_CASES:-1000000}"
echo "fuzzing with $IOLAB_FUZZ_CASES cases per target" >&2
time cargo test --release --test it fuzz::parsers_never_panic_deep -- --ignored --nocapture
