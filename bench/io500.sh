#!/usr/bin/env bash
# iolab's IO500 preset beside the io500 application itself (github.com/IO500/io500, built from
# its public source against the same Open MPI), at the same sizes, on NP ranks of this host, on
# one file system. Each alternation runs both (the order swapped every time) after a warm-up of
# each; per IO500 phase, and for BW, MD and the score: each tool's min/median/max, and the
# ratio iolab/io500 taken per alternation.
#
#   bench/io500.sh --io500 PATH [OPTIONS] [DIR]
#     --io500 PATH    the io500 binary its prepare.sh builds (it clones IOR and pfind from
#                     GitHub; offline, clone them into its build/ior and build/pfind first:
#                     IOR at the commit prepare.sh names, then the same build steps)
#     --np N          ranks (default 2)
#     --n N           alternations (default 5, at least 3)
#     --scale S       the preset's scale: quick (default) or default
#     --iolab PATH    iolab built with --features mpi (default $IOLAB, else
#                     $CARGO_TARGET_DIR/release/iolab, else target/release/iolab)
#     --calls C       iolab's metadata calls: mdtest (default: the preset's, mdtest's calls and
#                     pfind's counting), beneath (iolab's own), or both (a row for each)
#     DIR             where the files go (default .)
#
# The sizes: the preset's at --scale S (`reproduce IO500 --print`), written into one io500 ini
# file that both tools read (iolab: `reproduce IO500 --ini FILE`): [ior-easy] transferSize and
# blockSize, [ior-hard] segmentCount (47008-byte transfers), [mdtest-easy] and [mdtest-hard] n,
# drop-caches = TRUE. io500's stonewall is left at 300 s for both (with wear-out), so the sizes
# end every write phase first (io500's result then says INVALID: a short run, as IO500's rules
# count it). io500's phases that iolab's preset does not have are switched off (mdworkbench,
# find-easy, find-hard, ior-rnd4K-easy-read): its score is over the same twelve phases as
# iolab's (io500 leaves a phase that did not run out of it).
#
# What each tool times. io500: each phase's figure as it prints it ([RESULT] lines: IOR's
# bandwidth of the phase for ior-*, mdtest's rate for mdtest-*, pfind's rate for find), every
# cache dropped before every phase (drop-caches = TRUE: `echo 3 > /proc/sys/vm/drop_caches`).
# iolab: the ior phases' bytes over IOR's time (agg: the first open to the last close, commits
# included), the others' items over the slowest worker's time (min_SAR); the ini's
# drop-caches = TRUE gives it `drop_caches = true` (a cold data read writes 3 to drop_caches
# after evicting and before checking the files' pages with mincore) and `:cold` on find, stat,
# read-files and unlink (syncfs, then 3 to drop_caches); writes committed at the end (fsync, as
# IOR -e; the metadata phases by the sync command, as mdtest -Y). Both need root for the drops.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

io500="" dir=. np=2 n=5 scale=quick calls=mdtest
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --io500) io500=$(realpath "$2"); shift 2 ;;
    --np) np=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    -h | --help) sed -n '2,38p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (bench/io500.sh --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
    esac
done
[ -n "$io500" ] || { echo "--io500 PATH is needed: the io500 binary (github.com/IO500/io500, ./prepare.sh)" >&2; exit 2; }
[ -x "$io500" ] || { echo "--io500 $io500: not an executable" >&2; exit 2; }
[ "$n" -ge 3 ] || { echo "--n must be at least 3" >&2; exit 2; }
[ "$np" -ge 1 ] || { echo "--np must be at least 1" >&2; exit 2; }
case $scale in quick | default) ;; *) echo "--scale $scale: quick or default" >&2; exit 2 ;; esac
case $calls in mdtest) modes=(mdtest) ;; beneath) modes=(beneath) ;; both) modes=(mdtest beneath) ;;
*) echo "--calls $calls: mdtest, beneath or both" >&2; exit 2 ;; esac
dir=$(realpath "$dir")

. bench/lib.sh
need_open_mpi
command -v python3 >/dev/null || { echo "needs python3: apt-get install python3" >&2; exit 1; }
need_iolab_mpi "$iolab"

tmp=$(mktemp -d /tmp/iolab-bench-io500.XXXXXX)
work=$(mktemp -d "$dir/.bench-io500.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
asroot=()
[ "$(id -u)" != 0 ] || asroot=(--allow-run-as-root)
mpi() { mpirun "${asroot[@]}" --oversubscribe --bind-to none -np "$np" "$@"; }
quiet() { # quiet CMD...: stderr kept aside; on failure shown, and the script stops
    "$@" 2>"$tmp/err.txt" || { local rc=$?; echo "failed ($rc): $*" >&2; tail -30 "$tmp/err.txt" >&2; exit 1; }
}
[ -w /proc/sys/vm/drop_caches ] ||
    { echo "both tools drop the kernel's caches (io500 before every phase, iolab before its cold phases): /proc/sys/vm/drop_caches must be writable (run as root)" >&2; exit 1; }

results=$tmp/results.txt # lines: TOOL PHASE FIGURE ALTERNATION

# io500's ini at the preset's sizes per rank: both tools read it.
"$iolab" reproduce IO500 --scale "$scale" --print >"$tmp/preset.toml"
python3 - "$tmp/preset.toml" "$work/io500" >"$tmp/io500.ini" <<'EOF'
import re, sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))
sw = d["sweep"]
units = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
def size(s):
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", str(s))
    return int(m.group(1)) * units[m.group(2)]
p = {w: {k: sw[k][i] for k in sw if isinstance(sw[k], list) and len(sw[k]) == len(sw["workload"])}
     for i, w in enumerate(sw["workload"])}
easy_t, easy_b = size(p["ior-easy"]["bs"]), size(p["ior-easy"]["size"])
assert easy_b % easy_t == 0, (easy_b, easy_t)
hard = size(p["ior-hard"]["size"])
assert size(p["ior-hard"]["bs"]) == 47008 and hard % 47008 == 0, p["ior-hard"]
w = sys.argv[2]
print(f"""[global]
datadir = {w}/data
timestamp-datadir = FALSE
resultdir = {w}/results
timestamp-resultdir = FALSE
drop-caches = TRUE
drop-caches-cmd = bash -c "echo 3 > /proc/sys/vm/drop_caches"
[debug]
stonewall-time = 300
[ior-easy]
transferSize = {easy_t // 1024}k
blockSize = {easy_b // 1024}k
[ior-hard]
segmentCount = {hard // 47008}
[mdtest-easy]
n = {p["mdtest-easy"]["md_files"]}
[mdtest-hard]
n = {p["mdtest-hard"]["md_files"]}
[mdworkbench]
run = FALSE
[find-easy]
run = FALSE
[find-hard]
run = FALSE
[ior-rnd4K-easy-read]
run = FALSE""")
EOF

run_iolab() { # run_iolab ALT MODE
    local tool=iolab
    [ "$2" = mdtest ] || tool=iolab-$2
    mkdir -p "$work/iolab"
    quiet mpi "$iolab" reproduce IO500 --ini "$tmp/io500.ini" --scale "$scale" --set reps=1 --set "dirs=$work/iolab" \
        --set "md_calls=$2" --json --quiet --no-store >"$tmp/iolab.json"
    rm -rf "$work/iolab"
    python3 - "$tmp/iolab.json" "$1" "$tool" >>"$results" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
io = d["io500"]
assert not io["missing"], io["missing"]
for p in io["phases"]:
    assert p["values"][0] is not None, p
    print(sys.argv[3], p["name"], p["values"][0], sys.argv[2])
for k, name in (("bw", "BW"), ("md", "MD"), ("score", "score")):
    print(sys.argv[3], name, io[k][0], sys.argv[2])
EOF
}

run_io500() { # run_io500 ALT
    mkdir -p "$work/io500"
    (cd "$work/io500" && quiet mpi "$io500" "$tmp/io500.ini") >"$tmp/io500.out"
    rm -rf "$work/io500"
    python3 - "$tmp/io500.out" "$1" >>"$results" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
alt = sys.argv[2]
got = re.findall(r"^\[RESULT\]\s+(\S+)\s+([0-9.]+) (GiB/s|kIOPS)", text, re.M)
names = [g[0] for g in got]
want = ["ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write", "find",
        "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat",
        "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete"]
missing = [x for x in want if x not in names]
assert not missing, f"io500 printed no result for {missing}:\n{text}"
for name, v, _ in got:
    if name in want:
        print("io500", name, v, alt)
m = re.search(r"^\[SCORE ?\] Bandwidth ([0-9.]+) GiB/s : IOPS ([0-9.]+) kiops : TOTAL ([0-9.]+)", text, re.M)
assert m, f"no [SCORE] line:\n{text}"
for name, v in zip(("BW", "MD", "score"), m.groups()):
    print("io500", name, v, alt)
EOF
}

echo "bench/io500.sh: iolab's IO500 preset (--scale $scale) vs the io500 application ($io500)"
echo "machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r); $dir on $(findmnt -n -o FSTYPE,SOURCE -T "$dir" | tr -s ' ')"
echo "MPI: $mpi_version, $np ranks; iolab: $iolab"
: >"$results"
echo "io500's ini, read by both (the preset's sizes at --scale $scale, per rank):"
sed -n '/^\[ior-easy\]/,/^\[mdworkbench\]/p' "$tmp/io500.ini" | grep -v '^\[mdworkbench\]' | paste -sd' '
echo "warm-up ..." >&2
for m in "${modes[@]}"; do run_iolab warm "$m"; done
run_io500 warm
for i in $(seq 1 "$n"); do
    echo "alternation $i of $n (load average $(cut -d' ' -f1 /proc/loadavg)) ..." >&2
    if [ $((i % 2)) = 1 ]; then
        for m in "${modes[@]}"; do run_iolab "$i" "$m"; done
        run_io500 "$i"
    else
        run_io500 "$i"
        for m in "${modes[@]}"; do run_iolab "$i" "$m"; done
    fi
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" <<'EOF'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
rows = [r for r in rows if r[3] != "warm"]
order = []
for r in rows:
    if r[1] not in order:
        order.append(r[1])
print()
print(f"{'phase':<20} {'unit':<6} {'tool':<13} {'min':>9} {'median':>9} {'max':>9}   ratio iolab/io500 per alternation: min median max")
tools = [t for t in ("iolab", "iolab-beneath", "io500") if any(r[0] == t for r in rows)]
for ph in [p for p in order if p not in ("BW", "MD", "score")] + ["BW", "MD", "score"]:
    by = {t: {r[3]: float(r[2]) for r in rows if r[0] == t and r[1] == ph} for t in tools}
    unit = "GiB/s" if ph.startswith("ior") or ph == "BW" else ("" if ph == "score" else "kIOPS")
    for t in tools:
        xs = list(by[t].values())
        if not xs:
            continue
        tail = ""
        if t != "io500":
            alts = sorted(set(by[t]) & set(by["io500"]))
            ratio = [by[t][a] / by["io500"][a] for a in alts if by["io500"][a] > 0]
            if ratio:
                tail = f"   {min(ratio):.3f} {statistics.median(ratio):.3f} {max(ratio):.3f}"
        print(f"{ph:<20} {unit:<6} {t:<13} {min(xs):9.3f} {statistics.median(xs):9.3f} {max(xs):9.3f}{tail}")
EOF
