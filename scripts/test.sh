#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and integration tests.
# Installs any system package a test needs (as root, with apt-get) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkg() { # need_pkg COMMAND PACKAGE...
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${*:2} (needed by the tests)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${@:2}" >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${@:2}" >/dev/null 2>&1; } \
            || echo "could not install ${*:2}; tests that need it will say so and skip" >&2
    fi
}

# The fault and device tests make file systems on loop devices (they skip if these are missing).
need_pkg mkfs.ext4 e2fsprogs
need_pkg mkfs.btrfs btrfs-progs
need_pkg addpart util-linux
need_pkg chromium chromium # the HTML report test opens the page in headless Chromium

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
