#!/usr/bin/env bash
# iolab on MPI ranks against IOR and against the limit program (bench/mpi_limit.c: the same MPI
# and I/O calls, nothing else): a shared-file write (commit at the end) and a cold read on
# NP ranks of this host, the tools alternated N times (iolab, limit, IOR, iolab, ...), with
# min/median/max MB/s (10^6 B/s) per tool and phase and the median ratios. Every figure is all
# bytes over the slowest rank's time from a common barrier (iolab's min_SAR); IOR's own figure
# (MiB/s, converted) counts from its first open to its last close. Then the scale of the
# coordination: for 1, 4, 16 and 64 ranks (oversubscribed on a small machine), rank 0's peak
# memory, the wall time of the whole mpirun, the time inside the timed I/O, and what is left
# (start-up, plan broadcast, barriers, gathering, storing), with a tiny size per rank.
#
#   bench/mpi.sh [--ior-src PATH] [--quick] [DIR]
#     --ior-src PATH   IOR's public source (github.com/hpc/ior): built here against the same
#                      MPI (./bootstrap, configure CC=mpicc, make) in a temporary directory
#                      and run side by side; without it IOR is skipped (Debian has no package)
#     --quick          64 MiB per rank, scale up to 16 ranks (about a minute)
#     DIR              where the shared file goes (default .)
#   MPI_NP=4 MPI_SIZE_MIB=256 MPI_BS_KIB=1024 MPI_N=3   the sizes and alternations
#
# Buffered I/O on a virtual machine swings with the guest's memory state (up to 5x here): read
# the spread, not one figure. The cold read: the file is committed and evicted (iolab checks
# with mincore; the limit program fadvises; IOR's read runs after drop_caches).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
ior_src="" quick=0 dir=.
while [ $# -gt 0 ]; do
    case $1 in
    --ior-src) ior_src=$(realpath "$2"); shift 2 ;;
    --quick) quick=1; shift ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) dir=$1; shift ;;
    esac
done
dir=$(realpath "$dir")
np=${MPI_NP:-4}
size_mib=${MPI_SIZE_MIB:-256}
bs_kib=${MPI_BS_KIB:-1024}
n=${MPI_N:-3}
scale="1 4 16 64"
if [ $quick = 1 ]; then size_mib=${MPI_SIZE_MIB:-64}; scale="1 4 16"; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    { echo "needs Open MPI: apt-get install libopenmpi-dev openmpi-bin libclang-dev" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time: apt-get install time" >&2; exit 1; }
echo "building iolab with the mpi feature (cargo build --release --features mpi, target/mpi-release)" >&2
CARGO_TARGET_DIR=$root/target/mpi-release cargo build --release --features mpi -q
iolab=$root/target/mpi-release/release/iolab
"$iolab" engines >/dev/null

work=$(mktemp -d "$dir/.bench-mpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpicc -O2 -Wall -o "$work/mpi_limit" bench/mpi_limit.c
ior=""
if [ -n "$ior_src" ]; then
    echo "building IOR from $ior_src against $(mpirun --version | head -1)" >&2
    cp -r "$ior_src" "$work/ior-src"
    (cd "$work/ior-src" && ./bootstrap && ./configure CC=mpicc && make -j"$(nproc)") >"$work/ior-build.log" 2>&1 ||
        { tail -20 "$work/ior-build.log" >&2; echo "IOR did not build" >&2; exit 1; }
    ior=$work/ior-src/src/ior
else
    echo "IOR skipped: no --ior-src PATH given (Debian has no IOR package; its source is github.com/hpc/ior)" >&2
fi
mpirun_() { mpirun --oversubscribe --bind-to none "$@"; }
size=$((size_mib << 20))
bs=$((bs_kib << 10))
results=$work/results.txt
: >"$results"
export IOLAB_DB=$work/store.db

# Each tool once: "TOOL PHASE MB/s" lines into $results.
run_iolab() {
    mpirun_ -np "$np" "$iolab" run --layout shared --op write,read:cold --size "$size" --bs "$bs" --reps 1 \
        --dir "$work" --json --quiet >"$work/out.json"
    python3 - "$work/out.json" <<'EOF' >>"$results"
import json, sys
d = json.load(open(sys.argv[1]))
for ph in d["points"][0]["phases"]:
    r = ph["repetitions"][0]
    print("iolab", ph["name"].split(":")[0], r["total_bytes"] / r["time_ns"] * 1e3)
EOF
}
run_limit() {
    mpirun_ -np "$np" "$work/mpi_limit" "$work/limit.dat" "$size" "$bs" |
        awk '{ printf "limit %s %.3f\n", $1, $2 / $3 * 1e3 }' >>"$results"
}
run_ior() {
    [ -n "$ior" ] || return 0
    local f=$work/ior.dat common="-a POSIX -b $size -t $bs -s 1 -i 1 -o $work/ior.dat -k"
    mpirun_ -np "$np" "$ior" $common -w -e >"$work/ior.out"
    awk '$1 == "write" && NF > 20 { printf "ior write %.3f\n", $2 * 1.048576 }' "$work/ior.out" >>"$results"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    mpirun_ -np "$np" "$ior" $common -r >"$work/ior.out"
    awk '$1 == "read" && NF > 20 { printf "ior read %.3f\n", $2 * 1.048576 }' "$work/ior.out" >>"$results"
    rm -f "$f"
}

echo "iolab vs the limit program${ior:+ vs IOR}: $np ranks, shared file of $np x $size_mib MiB, bs $bs_kib KiB, $n alternations after a warm-up of each"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
run_iolab; run_limit; run_ior
: >"$results"
for _ in $(seq "$n"); do run_iolab; run_limit; run_ior; done
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
tools = [t for t in ("iolab", "limit", "ior") if any(r[0] == t for r in rows)]
med = {}
print(f"{'tool':6} {'phase':6} {'runs (MB/s)':40} {'min':>8} {'median':>8} {'max':>8}")
for phase in ("write", "read"):
    for t in tools:
        v = [float(r[2]) for r in rows if r[0] == t and r[1] == phase]
        med[t, phase] = statistics.median(v)
        print(f"{t:6} {phase:6} {' '.join(f'{x:.0f}' for x in v):40} {min(v):8.0f} {med[t, phase]:8.0f} {max(v):8.0f}")
for phase in ("write", "read"):
    line = f"median ratio, {phase}: iolab/limit {med['iolab', phase] / med['limit', phase]:.3f}"
    if "ior" in tools:
        line += f", iolab/IOR {med['iolab', phase] / med['ior', phase]:.3f}"
    print(line)
EOF

echo
echo "scale: 1 MiB per rank, write and read, 1 repetition; rank 0's peak RSS (/usr/bin/time on rank 0 only)"
printf '%6s %16s %10s %10s %16s %12s\n' ranks "rank-0 peak RSS" "wall s" "I/O s" "outside I/O s" "store bytes"
for ranks in $scale; do
    rm -f "$work"/scale.db*
    t0=$(date +%s%N)
    mpirun_ -np "$ranks" sh -c '
        if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
            exec /usr/bin/time -f "%M" -o "$0/rss.txt" "$@"
        else
            exec "$@"
        fi' "$work" "$iolab" run --layout shared --op write,read:cold --size 1MiB --bs 256KiB --reps 1 \
        --dir "$work" --db "$work/scale.db" --json --quiet >"$work/scale.json"
    t1=$(date +%s%N)
    python3 - "$work/scale.json" "$ranks" "$(cat "$work/rss.txt")" "$(( (t1 - t0) ))" "$(stat -c %s "$work/scale.db")" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
io_ns = sum(ph["repetitions"][0]["time_ns"] for ph in d["points"][0]["phases"])
ranks, rss_kib, wall_ns, store = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"{ranks:6} {rss_kib / 1024:12.1f} MiB {wall_ns / 1e9:10.2f} {io_ns / 1e9:10.3f} {(wall_ns - io_ns) / 1e9:16.2f} {store:12}")
EOF
done
echo "wall: the whole mpirun, MPI start-up included; I/O: the phases' slowest-rank times"
