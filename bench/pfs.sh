#!/usr/bin/env bash
# iolab against IOR on a real distributed file system from three client hosts: the simulated
# hosts with MooseFS over them (tests/hosts.sh up --fs moosefs: a chunkserver per host, an
# mfsmount per host), six ranks, two per host, under Open MPI. Three cases, each a write with
# fsync at the end (inside the time) and a cold read in which every rank reads what a rank on
# the next host wrote (IOR -C, iolab --reorder-reads node). Each tool writes in one mpirun and
# reads in a second, so both reads begin from the same state (iolab: the write with --keep, then
# the read with --reuse of its files; IOR: -w -k, then -r):
#   shared   one shared file, POSIX (IOR -a POSIX; iolab --layout shared)
#   fpp      a file per process, POSIX (IOR -F; iolab's default layout)
#   mpiio    one shared file, MPI-IO independent (IOR -a MPIIO; iolab --engine mpiio)
# A warm-up of each tool per case, then N alternations, the order swapped each time; per tool,
# case and phase min/median/max MB/s (10^6 B/s) and the ratio iolab/IOR. iolab's figure is its
# own with IOR's definition (agg_bytes_per_s in its JSON: all bytes over the span from the first
# open to the last close, commits included, from every rank's own clock readings); its min_SAR
# (from the start barrier to the slowest rank's end) is printed beside it.
#
# The shared file: IOR's ranks all open it with O_CREAT at once, and on MooseFS two clients
# creating one name at the same moment race (FUSE create): one rank's open64(O_CREAT|O_RDWR)
# fails with "File exists" and IOR aborts. So for the shared cases the script creates the empty
# file on h1 before each IOR write, checks that every host sees it, and runs IOR with -E (use
# the existing file, do not remove it first; IOR's POSIX open does not truncate, its MPI-IO open
# sets the size to 0) and -k; it removes the file after IOR's read. iolab makes its own files:
# rank 0 creates them when the run starts and empties them before each write phase, and every
# rank then opens them before the start barrier (docs/mpi.md). So in the shared cases both
# tools' timed opens are opens of an existing empty file, the name's creation outside the span;
# in the fpp case IOR's timed open creates each rank's file, iolab's opens one rank 0 made.
#
#   bench/pfs.sh --ior-src PATH [--ior PATH] [--size MIB] [--bs KIB] [--n N] [--iolab PATH]
#     --ior-src PATH   IOR's public source (github.com/hpc/ior): copied to /tmp and built
#                      there against the same Open MPI (./bootstrap; ./configure CC=mpicc; make)
#     --ior PATH       an IOR binary already built against the same Open MPI (instead)
#     --size MIB       MiB per rank (default 64)
#     --bs KIB         KiB per op (default 1024)
#     --n N            alternations after the warm-up (default 5)
#     --iolab PATH     the iolab binary (default $IOLAB, else $CARGO_TARGET_DIR/release/iolab,
#                      else target/release/iolab), built with --features mpi against Open MPI
#
# Needs root (the simulated hosts), MooseFS (moosefs-master moosefs-chunkserver
# moosefs-client), Open MPI, python3, fincore; for IOR autoconf, automake, make. It holds the
# hosts' lock (tests/hosts.sh lock) for its whole run, brings the hosts up with MooseFS and
# takes them down at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
for a in "$@"; do # the help before the hosts' lock, which another run may hold for minutes
    case $a in -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;; esac
done
if [ -z "${IOLAB_HOSTS_LOCK:-}" ]; then
    exec bash tests/hosts.sh lock bash "$0" "$@"
fi

ior_src="" ior="" size_mib=64 bs_kib=1024 n=5
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --ior-src) ior_src=$(realpath "$2"); shift 2 ;;
    --ior) ior=$(realpath "$2"); shift 2 ;;
    --size) size_mib=$2; shift 2 ;;
    --bs) bs_kib=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "unknown argument $1 (bench/pfs.sh --help)" >&2; exit 2 ;;
    esac
done
size=$((size_mib << 20)) bs=$((bs_kib << 10))
[ "$bs" -gt 0 ] && [ $((size % bs)) = 0 ] || { echo "--size must be a multiple of --bs" >&2; exit 2; }
[ "$n" -ge 1 ] || { echo "--n must be at least 1" >&2; exit 2; }
[ -n "$ior_src" ] || [ -n "$ior" ] || { echo "give IOR: --ior-src PATH (its source) or --ior PATH (a binary)" >&2; exit 2; }
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    { echo "needs Open MPI: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 1; }
mpi_version=$(mpirun --version 2>/dev/null | head -1)
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 1; }
[ -x "$iolab" ] && "$iolab" engines 2>/dev/null | grep -w mpiio >/dev/null || {
    echo "no iolab built with the mpi feature at $iolab: cargo build --release --features mpi, then --iolab PATH" >&2
    exit 1
}

tmp=$(mktemp -d /tmp/iolab-bench-pfs.XXXXXX) finished=0 alt=0 results=
summary() { # the table of what $results holds
    python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'case':7} {'phase':6} {'tool':6} {'runs (MB/s, IOR definition)':40} {'min':>7} {'median':>7} {'max':>7}")
for case in ("shared", "fpp", "mpiio"):
    for ph in ("write", "read"):
        v = {t: [float(r[3]) for r in rows if r[0] == case and r[1] == t and r[2] == ph] for t in ("iolab", "ior")}
        if not v["iolab"] or not v["ior"]:
            continue
        for t, x in v.items():
            print(f"{case:7} {ph:6} {t:6} {' '.join(f'{y:.0f}' for y in x):40} {min(x):7.0f} {statistics.median(x):7.0f} {max(x):7.0f}")
        r = [a / b for a, b in zip(v["iolab"], v["ior"])]
        print(f"{case:7} {ph:6} {'ratio':6} {' '.join(f'{y:.2f}' for y in r):40} {min(r):7.2f} {statistics.median(r):7.2f} "
              f"{max(r):7.2f}  (iolab/IOR; of medians {statistics.median(v['iolab']) / statistics.median(v['ior']):.2f})")
        own = [float(r[4]) for r in rows if r[0] == case and r[1] == "iolab" and r[2] == ph]
        print(f"{case:7} {ph:6} {'iolab':6} own headline min_SAR (barrier to slowest end), median {statistics.median(own):.0f} MB/s")
EOF
}
hosts() { bash tests/hosts.sh "$@"; }
cleanup() {
    if [ "$finished" = 0 ] && [ "$alt" -ge 1 ]; then
        echo "the run stopped before its end; what it measured (alternation $alt, partly):" >&2
        summary >&2 || true
    fi
    hosts down >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# quiet OUT CMD...: runs CMD, its stdout to OUT, its stderr kept aside; on failure shows both.
quiet() {
    local out=$1
    shift
    "$@" >"$out" 2>"$tmp/err.txt" ||
        { local rc=$?; echo "failed ($rc): $*" >&2; tail -n 20 "$out" "$tmp/err.txt" >&2; exit 1; }
}

if [ -n "$ior_src" ]; then
    [ -x "$ior_src/bootstrap" ] || { echo "$ior_src has no bootstrap: not IOR's source" >&2; exit 1; }
    ior_version=$(git -C "$ior_src" describe --tags --always 2>/dev/null || echo "?")
    echo "building IOR ($ior_version) from $ior_src in $tmp/ior against $mpi_version (CC=mpicc)" >&2
    cp -a "$ior_src/." "$tmp/ior"
    (cd "$tmp/ior" && ./bootstrap && ./configure CC=mpicc && make -j"$(nproc)") >"$tmp/ior-build.log" 2>&1 ||
        { tail -20 "$tmp/ior-build.log" >&2; echo "IOR did not build (log above)" >&2; exit 1; }
    ior=$tmp/ior/src/ior
else
    ior_version=$(git -C "$(dirname "$ior")" describe --tags --always 2>/dev/null || echo "built elsewhere")
fi
[ -x "$ior" ] || { echo "no IOR binary at $ior" >&2; exit 1; }

t0=$EPOCHREALTIME
up=$(hosts up --fs moosefs) || { echo "$up" >&2; echo "the hosts with MooseFS did not come up" >&2; exit 1; }
echo "$up" | grep "moosefs up" >/dev/null || { echo "$up" >&2; exit 1; }
setup_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
dir=/mnt/moosefs/bench
hosts run h1 "mkdir -p $dir"

results=$tmp/results.txt # lines: CASE TOOL PHASE MBPS [MIN_SAR_MBPS]
evict() { # evict FILE...: each host drops its pages of the files (fadvise DONTNEED), checked
    local h f
    for h in h1 h2 h3; do
        for f in "$@"; do
            hosts run "$h" "dd if=$f iflag=nocache count=0 status=none"
            [ "$(hosts run "$h" "fincore --bytes --noheadings --output RES $f" | tr -d ' ')" = 0 ] ||
                { echo "$h still holds pages of $f" >&2; exit 1; }
        done
    done
}
ior_mbps() { # ior_mbps OP FILE: the summary's Max(MiB) of OP in MB/s
    awk -v op="$1" '/^Summary of all tests/ { s = 1 } s && $1 == op { printf "%.3f\n", $2 * 1.048576; exit }' "$2"
}

run_ior() { # run_ior CASE
    local c=$1 h args=(-b "$size" -t "$bs" -s 1 -i 1 -e -C -o "$dir/ior.dat") files
    case $c in
    shared) args+=(-a POSIX -E) files=("$dir/ior.dat") ;;
    fpp) args+=(-a POSIX -F) files=() ;;
    mpiio) args+=(-a MPIIO -E) files=("$dir/ior.dat") ;;
    esac
    if [ "$c" != fpp ]; then # the shared file made by one host first (see the header)
        hosts run h1 ": >$dir/ior.dat"
        for h in h2 h3; do
            hosts run "$h" "test -f $dir/ior.dat" || { echo "$h does not see $dir/ior.dat" >&2; exit 1; }
        done
    fi
    quiet "$tmp/ior-w.out" hosts mpirun -np 6 "$ior" "${args[@]}" -w -k
    [ "$c" != fpp ] || mapfile -t files < <(hosts run h1 "ls $dir/ior.dat.*")
    evict "${files[@]}"
    quiet "$tmp/ior-r.out" hosts mpirun -np 6 "$ior" "${args[@]}" -r
    local w r
    w=$(ior_mbps write "$tmp/ior-w.out") r=$(ior_mbps read "$tmp/ior-r.out")
    [ -n "$w" ] && [ -n "$r" ] || { echo "no IOR summary:" >&2; cat "$tmp/ior-w.out" "$tmp/ior-r.out" >&2; exit 1; }
    echo "$c ior write $w" >>"$results"
    echo "$c ior read $r" >>"$results"
    hosts run h1 "rm -f $dir/ior.dat $dir/ior.dat.*"
}

run_iolab() { # run_iolab CASE: as IOR, the write (files kept) and the cold read in two runs
    local c=$1 rid args=(run --dir "$dir" --size "${size_mib}MiB" --bs "${bs_kib}KiB" --reps 1 --seed 1
        --sync end --sync-call fsync --json --quiet --no-store)
    case $c in
    shared) args+=(--layout shared) ;;
    fpp) ;;
    mpiio) args+=(--layout shared --engine mpiio --mpiio independent) ;;
    esac
    quiet "$tmp/iolab-w.json" hosts mpirun -np 6 "$iolab" "${args[@]}" --op write --keep
    rid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["points"][0]["phases"][0]["repetitions"][0]["run_id"])' "$tmp/iolab-w.json")
    quiet "$tmp/iolab-r.json" hosts mpirun -np 6 "$iolab" "${args[@]}" --op read:cold --reuse "$rid" --reorder-reads node
    hosts run h1 "rm -rf $dir/.iolab-$rid"
    python3 - "$c" "$tmp/iolab-w.json" "$tmp/iolab-r.json" >>"$results" <<'EOF'
import json, sys
case = sys.argv[1]
for path in sys.argv[2:]:
    ph = json.load(open(path))["points"][0]["phases"][0]
    r = ph["repetitions"][0]
    assert r["status"] == "complete", r
    assert len(r["workers"]) == 6 and [h["host"] for h in r["hosts"]] == ["h1", "h2", "h3"], r["hosts"]
    if ph["op"] == "read":
        assert ph["cache"]["policy"] == "cold" and r["resident_fraction"] == 0.0, (ph["cache"], r["resident_fraction"])
    # IOR's definition: all bytes over the first open to the last close, commits inside.
    print(case, "iolab", ph["op"], r["agg_bytes_per_s"] / 1e6, r["min_sar_bytes_per_s"] / 1e6)
EOF
}

echo "bench/pfs.sh: iolab vs IOR on MooseFS from three client hosts (the simulated hosts)"
echo "machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r)"
echo "file system: MooseFS $(dpkg-query -W -f '${Version}' moosefs-client 2>/dev/null || echo '?'), master on h1, a chunkserver per host (its own ext4 image), an mfsmount per host, goal 1, 64 MiB chunks; up in $setup_s s"
echo "MPI: $mpi_version, 6 ranks (2 per host); IOR: $ior_version; iolab: $("$iolab" --version | head -1) ($iolab)"
echo "per case: $size_mib MiB per rank, bs $bs_kib KiB, write with fsync at the end (timed), then a cold read of another host's data"
echo "cold: IOR's files evicted on every host (fadvise DONTNEED, fincore 0) between its write and read runs, read with -C;"
echo "      iolab's read:cold evicts on every reading host and checks with mincore (0.0% asserted), --reorder-reads node"
echo "runs per tool and case: the write in one mpirun, the cold read in a second (iolab --keep, then --reuse; IOR -w -k, then -r)"
echo "MB/s = 10^6 B/s, both tools by IOR's definition: all bytes over the first open to the last close, commits inside"
echo "      (IOR's own Max(MiB) x 1.048576; iolab's agg_bytes_per_s from its JSON)"
echo "shared file: made on h1 before each IOR write, IOR run with -E -k (MooseFS's create race); iolab makes its own"
echo "runs: a warm-up of each tool per case, then $n alternations, the order swapped each time"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
cases=(shared fpp mpiio)
for c in "${cases[@]}"; do run_iolab "$c"; run_ior "$c"; done # warm-up, not recorded
: >"$results"
for i in $(seq 1 "$n"); do
    alt=$i
    echo "alternation $i of $n (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    for c in "${cases[@]}"; do
        if [ $((i % 2)) = 1 ]; then run_iolab "$c"; run_ior "$c"; else run_ior "$c"; run_iolab "$c"; fi
    done
done
finished=1
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
summary
