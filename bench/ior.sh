#!/usr/bin/env bash
# IOR and `iolab ior` with the same arguments, side by side on NP ranks of this host: for each
# case, both write and read with -k; then the files they leave are compared offset by offset
# (the same files of the same sizes; every transfer written by the same rank at the same
# offset: IOR's from its data, each word of which carries its writer's rank, with -l offset the
# first word of each 4 KiB its offset too; iolab's from its per-op trace; and every transfer
# of iolab's file carrying iolab's stamp of its own offset), and their figures set side by side
# (IOR's summary, write and read MiB/s, against iolab's printed by `--format ior`), the tools
# alternated N times, min/median/max and the ratio iolab/IOR per alternation.
#
#   bench/ior.sh (--ior PATH | --ior-src PATH) [OPTIONS] [DIR]
#     --ior PATH       an IOR binary built against the same Open MPI
#     --ior-src PATH   IOR's public source (github.com/hpc/ior): a checkout or a git directory,
#                      copied to /tmp and built there (./bootstrap; ./configure CC=mpicc; make)
#     --np N           ranks (default 4)
#     --n N            alternations of the figures (default 3; 0: only the bytes)
#     --iolab PATH     iolab built with --features mpi (default $IOLAB, else
#                      $CARGO_TARGET_DIR/release/iolab, else target/release/iolab)
#     DIR              where the files go (default .)
#
# The cases: a shared file in 4 segments; a file per task; ior-hard's 47008-byte transfers
# interleaved (-b = -t); collective MPI-IO; a file per task in random order (-z, the same set of
# transfers per task, each tool its own order). IOR gets `-l offset` (its data packets; iolab
# writes its own data) and nothing else the other does not. Needs Open MPI, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ior="" ior_src="" dir=. np=4 n=3
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --ior) ior=$(realpath "$2"); shift 2 ;;
    --ior-src) ior_src=$(realpath "$2"); shift 2 ;;
    --np) np=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (bench/ior.sh --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
    esac
done
[ -n "$ior$ior_src" ] || { echo "--ior PATH or --ior-src PATH is needed (IOR's source: github.com/hpc/ior)" >&2; exit 2; }
dir=$(realpath "$dir")

. bench/lib.sh
need_open_mpi
command -v python3 >/dev/null || { echo "needs python3: apt-get install python3" >&2; exit 1; }
need_iolab_mpi "$iolab"

tmp=$(mktemp -d /tmp/iolab-bench-ior.XXXXXX)
work=$(mktemp -d "$dir/.bench-ior.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -z "$ior" ]; then
    if [ -d "$ior_src/objects" ] && [ -f "$ior_src/HEAD" ]; then
        git clone -q "$ior_src" "$tmp/ior-src"
        ior_src=$tmp/ior-src
    fi
    mkdir -p "$tmp/ior"
    build_ior "$ior_src" "$tmp"
fi
[ -x "$ior" ] || { echo "--ior $ior: not an executable" >&2; exit 2; }
asroot=()
[ "$(id -u)" != 0 ] || asroot=(--allow-run-as-root)
mpi() { mpirun "${asroot[@]}" --oversubscribe --bind-to none -np "$np" "$@"; }
quiet() { # quiet CMD...: stdout kept, stderr aside; on failure shown, and the script stops
    "$@" 2>"$tmp/err.txt" || { local rc=$?; echo "failed ($rc): $*" >&2; tail -30 "$tmp/err.txt" >&2; exit 1; }
}

cases=(
    "-a POSIX -w -r -b 1m -t 256k -s 4 -e"
    "-a POSIX -w -r -b 1m -t 256k -s 2 -F -e"
    "-a POSIX -w -r -b 47008 -t 47008 -s 64 -e"
    "-a MPIIO -c -w -r -b 256k -t 64k -s 4"
    "-a POSIX -w -r -b 256k -t 64k -s 2 -F -z --random-offset-seed 5 -e"
)

echo "bench/ior.sh: IOR ($ior) and iolab ior ($iolab), $np ranks, $mpi_version"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $dir on $(findmnt -n -o FSTYPE,SOURCE -T "$dir" | tr -s ' ')"
echo
echo "the files they leave (-k), offset by offset:"
for c in "${cases[@]}"; do
    read -r -a args <<<"$c"
    rm -rf "$work/ior" "$work/iolab" "$tmp/db"
    mkdir -p "$work/ior" "$work/iolab"
    quiet mpi "$ior" "${args[@]}" -k -l offset -o "$work/ior/testFile" >"$tmp/ior.out"
    quiet mpi "$iolab" ior "${args[@]}" -k -o "$work/iolab/testFile" --set latency=trace --db "$tmp/db" --quiet --json >"$tmp/iolab.json"
    quiet "$iolab" results trace last --phase write --db "$tmp/db" >"$tmp/trace.csv"
    python3 - "$work/ior" "$work/iolab" "$tmp/iolab.json" "$tmp/trace.csv" "$c" <<'EOF'
import csv, glob, json, os, struct, sys
ior_dir, iolab_dir, doc, trace, case = sys.argv[1:]
d = json.load(open(doc))
spec = d["spec"]
t = spec["bs_bytes"]
fpp = spec["layout"] == "file-per-worker"
ior_files = sorted(glob.glob(ior_dir + "/testFile*"))
work = glob.glob(iolab_dir + "/.iolab-*")
assert len(work) == 1, work
iolab_files = sorted(glob.glob(work[0] + ("/w*.dat" if fpp else "/shared.dat")))
sizes = lambda fs: [os.path.getsize(f) for f in fs]
assert sizes(ior_files) == sizes(iolab_files), (ior_files, sizes(ior_files), iolab_files, sizes(iolab_files))
# IOR: each transfer's first word: its writer's rank (high 32 bits) and its offset (low 32).
ior_map = {}
for fi, f in enumerate(ior_files):
    data = open(f, "rb").read()
    for off in range(0, len(data), t):
        w = struct.unpack_from("<Q", data, off)[0]
        assert w & 0xFFFFFFFF == off & 0xFFFFFFFF, (f, off, hex(w))
        ior_map[(fi, off)] = w >> 32
# iolab: the writer of each transfer from its trace (worker w on rank w; its file w with -F).
rank = {x["worker"]: x["rank"] for x in d["points"][0]["phases"][0]["repetitions"][0]["workers"]}
iolab_map = {}
for row in csv.DictReader(open(trace)):
    w = int(row["worker"])
    f = w if fpp else int(row["file"])
    iolab_map[(f, int(row["offset_bytes"]))] = rank[w]
assert iolab_map == ior_map, sorted(set(iolab_map.items()) ^ set(ior_map.items()))[:10]
# iolab's file: every 4 KiB word its stamp (the offset xor one salt per file): no gap, no shift.
for f in iolab_files:
    data = open(f, "rb").read()
    salts = {struct.unpack_from("<Q", data, off)[0] ^ off for off in range(0, len(data), 4096)} if t % 4096 == 0 else None
    assert salts is None or len(salts) == 1, (f, len(salts))
print(f"  {case:<66} ok: {len(ior_files)} file(s), {sum(sizes(ior_files))} bytes, {len(ior_map)} transfers by the same ranks at the same offsets")
EOF
done
rm -rf "$work/ior" "$work/iolab"

[ "$n" -gt 0 ] || exit 0
echo
echo "figures: IOR's summary against iolab's (--format ior), MiB/s, $n alternations (a shared machine swings: compare on a quiet one)"
results=$tmp/results.txt
: >"$results"
for i in $(seq 1 "$n"); do
    for c in "${cases[@]}"; do
        read -r -a args <<<"$c"
        for tool in ior iolab; do
            rm -rf "$work/run" && mkdir -p "$work/run"
            if [ "$tool" = ior ]; then
                quiet mpi "$ior" "${args[@]}" -o "$work/run/testFile" >"$tmp/out"
            else
                quiet mpi "$iolab" ior "${args[@]}" -o "$work/run/testFile" --no-store --quiet --format ior >"$tmp/out"
            fi
            # The summary's rows: Operation, then Max(MiB) (one repetition: every figure).
            sed -n '/^Summary of all tests:/,$p' "$tmp/out" | awk '$1 == "write" || $1 == "read" { print $1, $2 }' |
                while read -r op v; do echo "$tool|$c|$op|$v|$i" >>"$results"; done
        done
    done
done
python3 - "$results" <<'EOF'
import sys, statistics
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
cases = []
for r in rows:
    if r[1] not in cases:
        cases.append(r[1])
print(f"{'case':<66} {'op':<5} {'IOR min/median/max':>26} {'iolab min/median/max':>26}  ratio median")
for c in cases:
    for op in ("write", "read"):
        by = {t: {r[4]: float(r[3]) for r in rows if r[0] == t and r[1] == c and r[2] == op} for t in ("ior", "iolab")}
        if not by["ior"] or not by["iolab"]:
            continue
        s = lambda xs: f"{min(xs):8.1f} {statistics.median(xs):8.1f} {max(xs):8.1f}"
        ratio = [by["iolab"][a] / by["ior"][a] for a in by["ior"] if a in by["iolab"] and by["ior"][a] > 0]
        print(f"{c:<66} {op:<5} {s(list(by['ior'].values())):>26} {s(list(by['iolab'].values())):>26}  {statistics.median(ratio):.3f}")
EOF
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
