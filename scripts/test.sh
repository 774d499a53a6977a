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
    "mpirun|openmpi-bin|the MPI tests start ranks with Open MPI's mpirun"
    "mpicc|libopenmpi-dev|the build with --features mpi compiles against Open MPI"
    "@/usr/lib/llvm-*/lib/libclang*.so*|libclang-dev|the mpi crate's build generates its bindings with libclang"
    "mpiexec.mpich|mpich|the MPI tests run a build against MPICH under its launcher"
    "mpicc.mpich|libmpich-dev|the build against MPICH compiles with its headers"
    "prlimit|util-linux|an MPI test sets a file size limit on one rank"
)
missing=()
why=""
for n in "${needs[@]}"; do
    IFS='|' read -r cmd pkg reason <<<"$n"
    # A command, or (@PATTERN) a file that must exist.
    if [[ $cmd == @* ]]; then
        compgen -G "${cmd#@}" >/dev/null && continue
    else
        command -v "$cmd" >/dev/null 2>&1 && continue
    fi
    missing+=("$pkg")
    why+="${why:+; }$pkg ($reason: no ${cmd#@} here)"
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
# The tests that need the machine to themselves: the disk against a known truth (a throttle),
# a tuned spec rerun against the race that chose it, and read-ahead spikes of some 36 us.
cargo test --test it -- --ignored --test-threads=1 throttle:: tune::the_recommended_spec_reproduces_the_winner \
    readahead::

# The MPI side (docs/mpi.md): the suite again with the mpi feature, whose MPI tests run ranks
# under Open MPI's mpirun, plus a build against MPICH for the test that runs it under MPICH's
# launcher. The mpi crate builds against one MPI per target directory.
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi_target=target/mpi-openmpi
    CARGO_TARGET_DIR=$mpi_target cargo clippy --features mpi --all-targets -- -D warnings
    if command -v mpicc.mpich >/dev/null 2>&1; then
        MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpi-mpich cargo build --features mpi
        export IOLAB_TEST_MPICH_BIN=$PWD/target/mpi-mpich/debug/iolab
    fi
    CARGO_TARGET_DIR=$mpi_target cargo test --features mpi --all-targets
else
    echo "skipping the MPI tests: no Open MPI (mpicc, mpirun) here, and it could not be installed" >&2
fi
