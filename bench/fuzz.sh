#!/usr/bin/env bash
# Fuzzes the spec parser (TOML, --set, command-line flags, resolution), the units parser and the
# work-directory marker parser with IOLAB_FUZZ_CASES cases of each (default one million); and
# sizes and counts near 2^64 through --set, spec files and flags to the plan and the free-space
# need, which must never wrap (the release build here keeps overflow checks, so any wrap panics).
# Any panic fails with the smallest input that triggers it. CI runs fewer
# (1,000 cases of each: tests/it/fuzz.rs, `parsers_never_panic`).
set -euo pipefail
cd "$(dirname "$0")/.."
export IOLAB_FUZZ_CASES="${IOLAB_FUZZ_CASES:-1000000}"
echo "fuzzing with $IOLAB_FUZZ_CASES cases per target" >&2
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
time cargo test --release --test it fuzz::parsers_never_panic_deep -- --ignored --nocapture
