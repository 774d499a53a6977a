#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and integration tests.
# Installs any system package a test needs (as root, with apt-get) when it is missing, after
# saying on one line which packages and why.
set -euo pipefail
cd "$(dirname "$0")/.."

# COMMAND|PACKAGE|WHY: what the tests use, the package it comes in, and what for. A test whose
# command is missing says so and skips.
needs=(
    "mkfs.ext4|e2fsprogs|the fault and device tests make ext4 on loop devices"
    "mkfs.btrfs|btrfs-progs|the fault tests make btrfs on loop devices"
    "addpart|util-linux|the device tests add partitions to loop devices"
    "chromium|chromium|the HTML report test opens the page in headless Chromium"
)
missing=()
why=""
for n in "${needs[@]}"; do
    IFS='|' read -r cmd pkg reason <<<"$n"
    command -v "$cmd" >/dev/null 2>&1 && continue
    missing+=("$pkg")
    why+="${why:+; }$pkg ($reason: no $cmd here)"
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing with apt-get: $why" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 \
                && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } \
            || echo "could not install ${missing[*]}; the tests that need them will say so and skip" >&2
    else
        echo "not installing (that needs root and apt-get): $why; the tests that need them will say so and skip" >&2
    fi
fi

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
