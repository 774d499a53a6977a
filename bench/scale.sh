#!/usr/bin/env bash
# What grows with the ranks: iolab and IOR on 1, 4, 16, 64 (and, given --scale, more) MPI
# ranks of this host, oversubscribed, a tiny shared-file job (64 KiB per rank, one op, write
# then read), so that what is measured is the coordination, not the I/O. At each rank count a
# warm-up of each tool, then N alternations, the order swapped each time; per tool and count
# min/median/max of: the whole mpirun's wall time, rank 0's peak RSS (/usr/bin/time -f %M on
# rank 0 alone), the time outside the timed I/O (wall time less the phases' spans: iolab's
# span_ns, first open to last close; IOR's total(s), the same), and for iolab the store bytes
# each run added (one store per rank count; SQLite grows by 4 KiB pages).
#
#   bench/scale.sh --ior-src PATH [--scale "1 4 16 64"] [--n 3] [--iolab PATH] [DIR]
#     --ior-src PATH   IOR's public source (github.com/hpc/ior): copied to /tmp, built there
#                      against the same Open MPI (./bootstrap; ./configure CC=mpicc; make);
#                      without it IOR is skipped
#     --scale "R ..."  rank counts (default "1 4 16 64")
#     --n N            alternations after the warm-up (default 3)
#     --iolab PATH     the iolab binary (default $IOLAB, else $CARGO_TARGET_DIR/release/iolab,
#                      else target/release/iolab), built with --features mpi
#     DIR              where the data files and the stores go (default .)
#
# Needs Open MPI (mpicc, mpirun), python3, /usr/bin/time; for IOR autoconf, automake, make.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ior_src="" dir=. n=3 scale="1 4 16 64"
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --ior-src) ior_src=$(realpath "$2"); shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (bench/scale.sh --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
    esac
done
[ "$n" -ge 1 ] || { echo "--n must be at least 1" >&2; exit 2; }
dir=$(realpath "$dir")
. bench/lib.sh
need_open_mpi
command -v python3 >/dev/null || { echo "needs python3: apt-get install python3" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is needed for rank 0's peak RSS: apt-get install time" >&2; exit 1; }
[ -x "$iolab" ] && "$iolab" engines 2>/dev/null | grep -w mpiio >/dev/null ||
    { echo "no iolab built with the mpi feature at $iolab: cargo build --release --features mpi" >&2; exit 1; }

tmp=$(mktemp -d /tmp/iolab-bench-scale.XXXXXX)
work=$(mktemp -d "$dir/.bench-scale.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
asroot=()
[ "$(id -u)" != 0 ] || asroot=(--allow-run-as-root)
# rank0 NP RSSFILE CMD...: one mpirun of NP ranks, not bound, rank 0 under /usr/bin/time.
rank0() {
    local np=$1 rss=$2
    shift 2
    # shellcheck disable=SC2016
    mpirun "${asroot[@]}" --oversubscribe --bind-to none -np "$np" sh -c '
        if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then exec /usr/bin/time -f "%M" -o "$0" "$@"; else exec "$@"; fi' \
        "$rss" "$@" 2>"$tmp/err.txt" ||
        { echo "failed: mpirun -np $np $*" >&2; tail -30 "$tmp/err.txt" >&2; exit 1; }
}

ior=""
if [ -n "$ior_src" ]; then
    build_ior "$ior_src" "$tmp"
fi

rows=$tmp/rows.txt # lines: TOOL RANKS WALL_S RSS_KIB OUTSIDE_S STORE_BYTES|-
: >"$rows"
store_bytes() { # store_bytes DB: the store's bytes, its write-ahead log included
    local t=0 f
    for f in "$1" "$1-wal"; do [ ! -f "$f" ] || t=$((t + $(stat -c %s "$f"))); done
    echo "$t"
}
run_iolab() { # run_iolab RANKS RECORD
    local db=$work/scale-$1.db before after t0 t1
    before=$(store_bytes "$db")
    t0=$EPOCHREALTIME
    rank0 "$1" "$tmp/rss.txt" "$iolab" run --layout shared --op write,read --size 64KiB --bs 64KiB \
        --reps 1 --dir "$work" --db "$db" --json --quiet >"$tmp/iolab.json"
    t1=$EPOCHREALTIME
    after=$(store_bytes "$db")
    [ "$2" = 1 ] || return 0
    python3 - "$tmp/iolab.json" "$1" "$t0" "$t1" "$(tail -1 "$tmp/rss.txt")" "$((after - before))" >>"$rows" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ranks, t0, t1 = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
reps = [r for ph in d["points"][0]["phases"] for r in ph["repetitions"]]
assert all(r["status"] == "complete" and len(r["workers"]) == ranks for r in reps)
io = sum((r.get("span_ns") or r["time_ns"]) for r in reps) / 1e9
print("iolab", ranks, t1 - t0, sys.argv[5], t1 - t0 - io, sys.argv[6])
EOF
}
run_ior() { # run_ior RANKS RECORD
    [ -n "$ior" ] || return 0
    local t0 t1
    rm -f "$work/ior.dat"
    t0=$EPOCHREALTIME
    rank0 "$1" "$tmp/rss.txt" "$ior" -a POSIX -b 64k -t 64k -s 1 -i 1 -w -r -e -o "$work/ior.dat" >"$tmp/ior.out"
    t1=$EPOCHREALTIME
    rm -f "$work/ior.dat"
    [ "$2" = 1 ] || return 0
    # IOR's Results table: access ... total(s) iter; total(s) is first open to last close.
    awk -v r="$1" -v w="$(python3 -c "print($t1 - $t0)")" -v rss="$(tail -1 "$tmp/rss.txt")" '
        /^Results:/ { s = 1 } /^Summary of all tests/ { s = 0 }
        s && ($1 == "write" || $1 == "read") { io += $10; k++ }
        END { if (k != 2) exit 1; printf "ior %d %s %s %.6f -\n", r, w, rss, w - io }' "$tmp/ior.out" >>"$rows" ||
        { echo "no IOR results in its output:" >&2; cat "$tmp/ior.out" >&2; exit 1; }
}

tools=(iolab)
[ -z "$ior" ] || tools+=(ior)
echo "bench/scale.sh: iolab${ior:+ and IOR} on 1..N MPI ranks of this host, a tiny shared-file job"
echo "machine: $(nproc) CPUs, $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r); $dir on $(findmnt -n -o FSTYPE -T "$dir")"
echo "MPI: $mpi_version (shared-memory transport, ranks oversubscribed, not bound); iolab: $("$iolab" --version | head -1)"
echo "job: 64 KiB per rank in one op, one shared file, write (fdatasync at the end) then read, 1 repetition;"
echo "     iolab stores into one SQLite store per rank count ($work), IOR writes no store"
echo "runs: per rank count a warm-up of each tool, then $n alternations, the order swapped each time"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ranks in $scale; do
    for t in "${tools[@]}"; do "run_$t" "$ranks" 0; done
    for i in $(seq 1 "$n"); do
        if [ $((i % 2)) = 1 ]; then order=("${tools[@]}"); else order=(); for t in "${tools[@]}"; do order=("$t" "${order[@]}"); done; fi
        for t in "${order[@]}"; do "run_$t" "$ranks" 1; done
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def mmm(xs, f):
    return "/".join(f(x) for x in (min(xs), statistics.median(xs), max(xs)))
print("min/median/max per tool and rank count; RSS in MiB (2^20 B), times in s, store in bytes added per run")
print(f"{'tool':6} {'ranks':>5} {'wall s':>20} {'rank-0 peak RSS MiB':>22} {'outside timed I/O s':>22} {'store bytes':>22}")
keys = sorted({(r[0], int(r[1])) for r in rows}, key=lambda k: (k[1], k[0]))
for tool, ranks in keys:
    rs = [r for r in rows if r[0] == tool and int(r[1]) == ranks]
    wall = [float(r[2]) for r in rs]
    rss = [int(r[3]) / 1024 for r in rs]
    out = [float(r[4]) for r in rs]
    store = [int(r[5]) for r in rs if r[5] != "-"]
    s = mmm(store, lambda x: f"{x:.0f}") if store else "-"
    print(f"{tool:6} {ranks:5} {mmm(wall, lambda x: f'{x:.2f}'):>20} {mmm(rss, lambda x: f'{x:.1f}'):>22} "
          f"{mmm(out, lambda x: f'{x:.2f}'):>22} {s:>22}")
EOF
