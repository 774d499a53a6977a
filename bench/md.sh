#!/usr/bin/env bash
# iolab's metadata phases beside mdtest (IOR's source, github.com/hpc/ior, built here against
# the same Open MPI) and beside the bare C loop of bench/limit.c: create, stat and remove of
# empty files, a directory per rank (mdtest -u) and one shared directory, on NP ranks of this
# host, on one file system. Each case runs a warm-up of each tool, then N alternations with
# the order swapped every time (iolab first, then mdtest first, ...); per tool and phase
# min/median/max ops/s and the ratio iolab/mdtest taken per alternation.
# Then iolab's own cost: iolab (threads, no MPI) against `limit md` (the same calls on the same
# names, nothing else), 1 and 2 workers, alternated the same way; rates, and CPU time per op.
#
#   bench/md.sh --ior-src PATH [OPTIONS] [DIR]
#     --ior-src PATH  IOR's public source: a checkout, or a git directory (its HEAD is used);
#                     copied to /tmp, built there (./bootstrap; ./configure CC=mpicc; make);
#                     without it the mdtest part is skipped (Debian has no package)
#     --np "N ..."    rank counts of the mdtest comparison (default "1 4")
#     --items N       files per rank (default 20000)
#     --n N           alternations (default 5, at least 5)
#     --limit-workers "W ..."  workers of the limit comparison (default "1 2"; "" = none)
#     --latency MODE  iolab's latency in the limit comparison: histogram (default: a clock
#                     read per op, which the loop does not make) or off (the loop's calls alone)
#     --iolab PATH    iolab built with --features mpi (default $IOLAB, else
#                     $CARGO_TARGET_DIR/release/iolab, else target/release/iolab)
#     DIR             where the trees go (default .): a local file system, or a mount of a
#                     distributed one (tests/hosts.sh up --fs moosefs)
#
# What each tool times, per phase: mdtest from an MPI_Barrier before the phase to one after
# it, on every rank (its rate: all items / that time, the slowest rank's); it makes each path
# with sprintf from the test directory and calls open(O_CREAT|O_WRONLY) + close, stat, unlink
# on it. iolab from its start barrier to each worker's last op (min_SAR: all items / the
# slowest worker's time, the figure compared); it calls openat(O_CREAT|O_EXCL|O_NOFOLLOW) +
# close, fstatat, unlinkat on a name beneath the directory, opened once (no path walk), and
# reads the clock per op for its latency histogram. Neither commits (iolab --sync none; mdtest
# without -Y). limit: iolab's calls and nothing else (no clock per op, no histogram).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ior_src="" dir=. nps="1 4" items=20000 n=5 limit_workers="1 2" latency=histogram
iolab=${IOLAB:-${CARGO_TARGET_DIR:-$root/target}/release/iolab}
while [ $# -gt 0 ]; do
    case $1 in
    --ior-src) ior_src=$(realpath "$2"); shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --items) items=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --limit-workers) limit_workers=$2; shift 2 ;;
    --latency) latency=$2; shift 2 ;;
    --iolab) iolab=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,33p' "$0"; exit 0 ;;
    -*) echo "unknown option $1 (bench/md.sh --help)" >&2; exit 2 ;;
    *) dir=$1; shift ;;
    esac
done
[ "$n" -ge 5 ] || { echo "--n must be at least 5" >&2; exit 2; }
[ "$items" -ge 1 ] || { echo "--items must be at least 1" >&2; exit 2; }
dir=$(realpath "$dir")

. bench/lib.sh
need_open_mpi
command -v python3 >/dev/null || { echo "needs python3: apt-get install python3" >&2; exit 1; }
command -v gcc >/dev/null || { echo "needs gcc: apt-get install gcc" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time: apt-get install time" >&2; exit 1; }
need_iolab_mpi "$iolab"

tmp=$(mktemp -d /tmp/iolab-bench-md.XXXXXX)
work=$(mktemp -d "$dir/.bench-md.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
asroot=()
[ "$(id -u)" != 0 ] || asroot=(--allow-run-as-root)
mpi() { # mpi NP CMD...: one mpirun on this host, ranks not bound (they may outnumber the cores)
    local np=$1
    shift
    mpirun "${asroot[@]}" --oversubscribe --bind-to none -np "$np" "$@"
}
quiet() { # quiet CMD...: stderr kept aside; on failure shown, and the script stops
    "$@" 2>"$tmp/err.txt" || { local rc=$?; echo "failed ($rc): $*" >&2; tail -30 "$tmp/err.txt" >&2; exit 1; }
}

limit=$tmp/limit
gcc -O2 -Wall -o "$limit" bench/limit.c -lpthread

mdtest=""
if [ -n "$ior_src" ]; then
    for t in autoreconf make git; do
        command -v $t >/dev/null || { echo "building mdtest needs $t: apt-get install autoconf automake make git" >&2; exit 1; }
    done
    mkdir "$tmp/ior"
    if [ -x "$ior_src/bootstrap" ]; then
        cp -a "$ior_src/." "$tmp/ior"
        ior_version=$(git -C "$ior_src" describe --tags --always 2>/dev/null || echo "?")
    else
        git --git-dir="$ior_src" archive HEAD | tar -x -C "$tmp/ior"
        ior_version=$(git --git-dir="$ior_src" describe --tags --always 2>/dev/null || echo "?")
    fi
    echo "building mdtest (IOR $ior_version) from $ior_src in $tmp/ior against $mpi_version (CC=mpicc)" >&2
    (cd "$tmp/ior" && ./bootstrap && ./configure CC=mpicc && make -j"$(nproc)") >"$tmp/ior-build.log" 2>&1 ||
        { tail -20 "$tmp/ior-build.log" >&2; echo "mdtest did not build (log above)" >&2; exit 1; }
    mdtest=$tmp/ior/src/mdtest
    [ -x "$mdtest" ] || { echo "IOR built, but there is no $mdtest" >&2; exit 1; }
fi

results=$tmp/results.txt # lines: CASE TOOL PHASE OPS_PER_S ALTERNATION

# iolab PLACE CASE NP DIRS ALT: create, stat, unlink of ITEMS empty files per rank.
run_iolab() {
    local case=$1 np=$2 dirs=$3 alt=$4
    quiet mpi "$np" "$iolab" run --op create,stat,unlink --md-files "$items" --md-dirs "$dirs" --sync none \
        --reps 1 --dir "$work" --json --quiet --no-store >"$tmp/iolab.json"
    python3 - "$tmp/iolab.json" "$np" "$items" "$case" "$alt" >>"$results" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
np, items, case, alt = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
for ph in d["points"][0]["phases"]:
    r = ph["repetitions"][0]
    assert r["status"] == "complete", r
    assert sorted(w.get("rank", 0) for w in r["workers"]) == list(range(np)), "one worker per rank"
    assert r["ops"] == np * items, r["ops"]
    print(case, "iolab", ph["name"], r["min_sar_ops_per_s"], alt)
EOF
}

# mdtest: the same: -F files only, -C create, -T stat, -r remove, -n items per rank, -u a
# directory per rank (else one shared), one iteration, no tree below (depth 0).
run_mdtest() {
    [ -n "$mdtest" ] || return 0
    local case=$1 np=$2 dirs=$3 alt=$4 u=()
    [ "$dirs" = shared ] || u=(-u)
    quiet mpi "$np" "$mdtest" -F -C -T -r -n "$items" "${u[@]}" -i 1 -d "$work/mdtest" >"$tmp/mdtest.out"
    awk -v c="$case" -v a="$alt" '
        /^SUMMARY rate/ { s = 1 }
        /^SUMMARY time/ { s = 0 }
        s && /File creation/ { print c, "mdtest", "create", $3, a }
        s && /File stat/ { print c, "mdtest", "stat", $3, a }
        s && /File removal/ { print c, "mdtest", "unlink", $3, a }' "$tmp/mdtest.out" >"$tmp/mdtest.rows"
    [ "$(wc -l <"$tmp/mdtest.rows")" = 3 ] || { echo "no mdtest summary in its output:" >&2; cat "$tmp/mdtest.out" >&2; exit 1; }
    cat "$tmp/mdtest.rows" >>"$results"
    rm -rf "$work/mdtest"
}

# The limit comparison: iolab's threads against `limit md`, unique directories. Besides the
# rates, each run's CPU time (user + system, /usr/bin/time) per op over the three phases, its
# fixed part (the same program with one item per worker, the median of three) taken off: on
# a loaded machine the rates say more about the scheduler than about either program, the CPU
# time does not.
iolab_md() { # iolab_md WORKERS ITEMS: one run, its JSON in $tmp/iolab.json, its CPU in $tmp/cpu
    quiet /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$iolab" run --op create,stat,unlink --md-files "$2" \
        --workers "$1" --sync none --reps 1 --latency "$latency" --dir "$work" --json --quiet --no-store >"$tmp/iolab.json"
}
limit_md() { # limit_md WORKERS ITEMS: one run, its lines in $tmp/limit.out, its CPU in $tmp/cpu
    quiet /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$limit" md "$work" "$2" "$1" unique >"$tmp/limit.out"
}
cpu_s() { awk '{ print $1 + $2 }' "$tmp/cpu"; }
fixed_cpu() { # fixed_cpu TOOL WORKERS: the median CPU seconds of three one-item runs
    local xs=()
    for _ in 1 2 3; do "${1}_md" "$2" 1; xs+=("$(cpu_s)"); done
    printf '%s\n' "${xs[@]}" | sort -g | sed -n 2p
}
declare -A fixed
run_iolab_threads() {
    local case=$1 w=$2 alt=$3
    [ -n "${fixed[iolab$w]:-}" ] || fixed[iolab$w]=$(fixed_cpu iolab "$w")
    iolab_md "$w" "$items"
    python3 - "$tmp/iolab.json" "$case" "$alt" "$(cpu_s)" "${fixed[iolab$w]}" >>"$results" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ops = 0
for ph in d["points"][0]["phases"]:
    r = ph["repetitions"][0]
    assert r["status"] == "complete", r
    ops += r["ops"]
    print(sys.argv[2], "iolab", ph["name"], r["min_sar_ops_per_s"], sys.argv[3])
print(sys.argv[2], "iolab", "cpu_us", (float(sys.argv[4]) - float(sys.argv[5])) / ops * 1e6, sys.argv[3])
EOF
}
run_limit() {
    local case=$1 w=$2 alt=$3
    [ -n "${fixed[limit$w]:-}" ] || fixed[limit$w]=$(fixed_cpu limit "$w")
    limit_md "$w" "$items"
    awk -v c="$case" -v a="$alt" '$1 == "md" { print c, "limit", $2, $8, a }' "$tmp/limit.out" >>"$results"
    echo "$case limit cpu_us $(awk -v f="${fixed[limit$w]}" -v n=$((3 * w * items)) '{ print ($1 + $2 - f) / n * 1e6 }' "$tmp/cpu") $alt" >>"$results"
}

echo "bench/md.sh: iolab's metadata phases vs mdtest${mdtest:+ (IOR $ior_version)} and vs the bare loop (bench/limit.c md)"
echo "machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r); $dir on $(findmnt -n -o FSTYPE,SOURCE -T "$dir" | tr -s ' ')"
echo "MPI: $mpi_version; iolab: $iolab"
[ -n "$mdtest" ] || echo "mdtest: skipped, no --ior-src PATH given (its source is github.com/hpc/ior)"
echo "each case: $items empty files per rank (worker): create, stat, remove; no commit (iolab --sync none, mdtest without -Y)"
echo "limit comparison: iolab with --latency $latency"
echo "ops/s: all items over the slowest rank's time (iolab's min_SAR; mdtest's rate: its barrier to barrier)"
echo "runs: a warm-up of each tool, then $n alternations, the order swapped every time"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$results"

alternate() { # alternate CASE A B ARGS...: tools A and B, warm-up then N alternations
    local case=$1 a=$2 b=$3
    shift 3
    "run_$a" "$case" "$@" warm
    "run_$b" "$case" "$@" warm
    for i in $(seq 1 "$n"); do
        if [ $((i % 2)) = 1 ]; then
            "run_$a" "$case" "$@" "$i"
            "run_$b" "$case" "$@" "$i"
        else
            "run_$b" "$case" "$@" "$i"
            "run_$a" "$case" "$@" "$i"
        fi
    done
}

if [ -n "$mdtest" ]; then
    for np in $nps; do
        for dirs in unique shared; do
            echo "case mdtest-$dirs-np$np ..." >&2
            alternate "$dirs,np=$np" iolab mdtest "$np" "$dirs"
        done
    done
fi
for w in $limit_workers; do
    echo "case limit-w$w ..." >&2
    alternate "limit,workers=$w" iolab_threads limit "$w"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" <<'EOF'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
rows = [r for r in rows if r[4] != "warm"]
cases = []
for r in rows:
    if r[0] not in cases:
        cases.append(r[0])
def mmm(xs):
    if max(xs) < 100:
        return f"{min(xs):9.3f} {statistics.median(xs):9.3f} {max(xs):9.3f}"
    return f"{min(xs):9.0f} {statistics.median(xs):9.0f} {max(xs):9.0f}"
print()
print(f"{'case':<16} {'phase':<7} {'tool':<7} {'min':>9} {'median':>9} {'max':>9}   ratio iolab/other per alternation: min median max")
print("(create, stat, unlink: ops/s; cpu_us: CPU microseconds per op over the three phases, user + system, fixed cost taken off: lower is better)")
for c in cases:
    tools = [t for t in ("iolab", "mdtest", "limit") if any(r[0] == c and r[1] == t for r in rows)]
    for ph in ("create", "stat", "unlink", "cpu_us"):
        if not any(r[0] == c and r[2] == ph for r in rows):
            continue
        by = {t: {r[4]: float(r[3]) for r in rows if r[0] == c and r[1] == t and r[2] == ph} for t in tools}
        other = [t for t in tools if t != "iolab"][0]
        alts = sorted(set(by["iolab"]) & set(by[other]))
        ratio = [by["iolab"][a] / by[other][a] for a in alts if by[other][a] > 0]
        for t in tools:
            xs = list(by[t].values())
            tail = ""
            if t == "iolab" and ratio:
                tail = f"   {min(ratio):.3f} {statistics.median(ratio):.3f} {max(ratio):.3f}"
            print(f"{c:<16} {ph:<7} {t:<7} {mmm(xs)}{tail}")
EOF
