#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and integration tests, the MPI tests, and the
# tests that need the machine to themselves. Every stage runs even when an earlier one failed;
# the script ends with the slowest tests, each stage's time, and exit 1 if anything failed.
#
# One build serves every test: where MPI is installed (it is installed below when missing), the
# suite is built once with the mpi feature and runs once, the MPI tests among the rest; the
# build without the feature is linted. A second build, against MPICH, makes the one binary the
# MPICH test runs under MPICH's launcher.
#
# Installs any system package a test needs (as root, with apt-get) when it is missing, after
# saying on one line which packages and why.
set -uo pipefail
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
    # libclang.so itself: libclang-cpp.so, which other packages bring, is no use to bindgen.
    "@/usr/lib/llvm-*/lib/libclang.so*|libclang-dev|the mpi crate's build generates its bindings with libclang"
    "mpiexec.mpich|mpich|the MPI tests run a build against MPICH under its launcher"
    "mpicc.mpich|libmpich-dev|the build against MPICH compiles with its headers"
    "prlimit|util-linux|an MPI test sets a file size limit on one rank"
    "bindfs|bindfs|the label tests mount a FUSE file system (bindfs) at a path with escaped characters"
    "strace|strace|the metadata test of mdtest's calls reads the calls iolab makes; the fio job tests count fio's and iolab's fsyncs"
    "fio|fio|the workload and fio job tests compare iolab's trace with fio's own (write_iolog)"
    "mfsmaster|moosefs-master|the distributed file system tests run a MooseFS master on the simulated hosts"
    "mfschunkserver|moosefs-chunkserver|the distributed file system tests run a MooseFS chunkserver on each simulated host"
    "mfsmount|moosefs-client|the distributed file system tests mount MooseFS on each simulated host"
    "glusterd|glusterfs-server|the distributed file system tests run GlusterFS servers on the simulated hosts"
    "glusterfs|glusterfs-client|the distributed file system tests mount GlusterFS on each simulated host"
    "ceph-mon|ceph-mon|the CephFS tests run a Ceph monitor on the simulated hosts"
    "ceph-mgr|ceph-mgr|the CephFS tests run a Ceph manager on the simulated hosts"
    "ceph-osd|ceph-osd|the CephFS tests run a Ceph OSD on each simulated host"
    "ceph-mds|ceph-mds|the CephFS tests run a Ceph metadata server on the simulated hosts"
    "ceph-fuse|ceph-fuse|the CephFS tests mount CephFS with ceph-fuse on each simulated host"
    "ceph|ceph-common|the CephFS tests set the cluster up with ceph, ceph-authtool and monmaptool"
    "slurmctld|slurm-wlm|the Slurm tests run slurmctld, slurmd and srun on the simulated hosts"
    "munged|munge|the Slurm tests authenticate with munged on each simulated host"
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

# Installed without the packages they recommend: Ceph's would bring its dashboard, its
# Python modules and more (about 1 min here without them, 76 packages).
lean=(ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common)
apt_install() {
    local plain=() slim=() p
    for p in "$@"; do
        if [[ " ${lean[*]} " == *" $p "* ]]; then slim+=("$p"); else plain+=("$p"); fi
    done
    { [ ${#plain[@]} = 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${plain[@]}"; } >/dev/null 2>&1 \
        && { [ ${#slim[@]} = 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${slim[@]}"; } >/dev/null 2>&1
}
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing with apt-get: $why" >&2
        apt_install "${missing[@]}" \
            || { apt-get update -q >/dev/null 2>&1 && apt_install "${missing[@]}"; } \
            || echo "could not install ${missing[*]}; the tests that need them will say so and skip" >&2
    else
        echo "not installing (that needs root and apt-get): $why; the tests that need them will say so and skip" >&2
    fi
fi

# Each stage: its name, then its command. Its time goes in the summary at the end.
failed=()
times=()
stage() {
    local name=$1 start=$SECONDS
    shift
    echo "==> $name" >&2
    if "$@"; then
        times+=("$(printf '%5d s  %s' $((SECONDS - start)) "$name")")
    else
        times+=("$(printf '%5d s  %s  FAILED' $((SECONDS - start)) "$name")")
        failed+=("$name")
        return 1
    fi
}

# The test runner: cargo-nextest (each test in its own process, per-test times; settings in
# .config/nextest.toml) where it is installed, else cargo's own.
nextest=false
cargo nextest --version >/dev/null 2>&1 && nextest=true
# The tests that need the machine to themselves (each #[ignore]d with the reason, and run here
# alone, after the suite): the disk against a known truth (a throttle), a tuned spec rerun
# against the race that chose it, and read-ahead spikes of some 36 us.
alone=(throttle:: tune::the_recommended_spec_reproduces_the_winner readahead::)

features=()
mpi=false
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
    mpi=true
    features=(--features mpi)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # The MPI tests' ranks share the CPUs with the other tests: a rank waiting in MPI yields
    # them instead of spinning (as the simulated hosts' hostfile and Slurm wrapper already say).
    export OMPI_MCA_mpi_yield_when_idle=1
else
    echo "the MPI tests will skip: no Open MPI (mpicc, mpirun) here, and it could not be installed" >&2
fi

# The build against MPICH: the suite's build copied (every crate but the MPI bindings is the
# same), then the bindings made again against MPICH (mpi-sys's build script does not notice a
# changed MPICC, so its outputs are removed) and the binary built.
target=${CARGO_TARGET_DIR:-target}
mpich_build() {
    local dir=$target/mpi-mpich
    mkdir -p "$dir"
    rm -rf "$dir/debug"
    cp -a "$target/debug" "$dir/debug"
    rm -rf "$dir"/debug/.fingerprint/mpi-* "$dir"/debug/build/mpi-* "$dir"/debug/deps/libmpi*-*.rlib \
        "$dir"/debug/deps/libmpi*-*.rmeta "$dir"/debug/deps/mpi*-*.d
    MPICC=mpicc.mpich CARGO_TARGET_DIR=$dir cargo build -q --features mpi --bin iolab || return 1
    # The binary must link MPICH, not Open MPI.
    # (ldd's output is read whole first: `ldd | grep -q` under pipefail fails whenever grep
    # stops reading before ldd has written its last line.)
    local libs
    libs=$(ldd "$dir/debug/iolab") || return 1
    if grep -Eq "libmpich\.so|libmpi\.so\.12" <<<"$libs" && ! grep -q libmpi.so.40 <<<"$libs"; then
        return 0
    fi
    echo "$dir/debug/iolab does not link MPICH:" >&2
    grep -i mpi <<<"$libs" >&2
    return 1
}

# One test more than there are cores: a test waiting on the disk, a subprocess or a daemon
# leaves its core to another.
threads=$(( $(nproc) + 1 ))
suite() {
    if $nextest; then
        cargo nextest run "${features[@]}" --lib --bins --tests --no-fail-fast --test-threads "$threads"
    else
        cargo test "${features[@]}" --lib --bins --tests --no-fail-fast
    fi
}

alone_tests() {
    if $nextest; then
        local expr=""
        for t in "${alone[@]}"; do expr+="${expr:+ | }test(/^${t}/)"; done
        cargo nextest run "${features[@]}" --test it --run-ignored only --test-threads 1 -E "$expr"
    else
        cargo test "${features[@]}" --test it -- --ignored --test-threads=1 "${alone[@]}"
    fi
}

# The slowest tests of the suite (from the timing record nextest keeps), one line each.
slowest() {
    local junit=target/nextest/default/junit.xml
    [ -f "$junit" ] || return 0
    echo "slowest tests:" >&2
    python3 - "$junit" >&2 <<'EOF' || true
import sys
import xml.etree.ElementTree as ET
cases = [(float(c.get("time", 0)), f"{c.get('classname')} {c.get('name')}")
         for c in ET.parse(sys.argv[1]).iter("testcase")]
for t, name in sorted(cases, reverse=True)[:10]:
    print(f"  {t:7.1f} s  {name}")
EOF
}

stage "format (cargo fmt --check)" cargo fmt --all -- --check
stage "lints, build without MPI (clippy)" cargo clippy --all-targets -- -D warnings
if $mpi; then
    stage "lints, build with MPI (clippy --features mpi)" cargo clippy --features mpi --all-targets -- -D warnings
fi
stage "build the tests" cargo test "${features[@]}" --lib --bins --tests --no-run
if $mpi && command -v mpicc.mpich >/dev/null 2>&1; then
    stage "build against MPICH" mpich_build && export IOLAB_TEST_MPICH_BIN=$(realpath "$target/mpi-mpich/debug/iolab")
fi
stage "unit and integration tests" suite
slowest
stage "doc tests" cargo test "${features[@]}" --doc
stage "tests that need the machine to themselves" alone_tests

echo "stages:" >&2
printf '  %s\n' "${times[@]}" >&2
echo "whole test command: $SECONDS s" >&2
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}" >&2
    exit 1
fi
