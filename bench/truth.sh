#!/usr/bin/env bash
# iolab and fio against a known truth: a block-I/O cgroup throttles reads of the target's disk
# to RATE MiB/s (cgroup v1 blkio.throttle.read_bps_device, else v2 io.max), and both tools
# read a 512 MiB file cold, 1 MiB sequential reads, psync, one worker, inside it. Run as root.
#
#   iolab      write, then read:cold, in one process (sync = end; the cache is emptied before the
#              read, outside its timed region); its whole-phase rate (max_SAR) and steady rate
#              (the slope of the cumulative bytes over the steady window, docs/reports.md).
#   fio-1proc  fio writing (end_fsync=1) then reading (stonewall, invalidate=1) in one process,
#              as iolab does: fio's invalidate (fadvise DONTNEED of the pages its write left
#              cached) runs inside its timed read.
#   fio-cold   fio reading only, the file evicted beforehand (outside fio).
#
# Each figure is printed as MB/s (10^6 B/s) and as its ratio to the throttle, per round; N
# rounds (default 3), the tools alternating.
#
#   bench/truth.sh [DIR] [RATE_MIB_S] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "${1:-.}")
rate_mib=${2:-200}
n=${3:-3}
[ "$(id -u)" = 0 ] || { echo "run as root: it makes a cgroup" >&2; exit 1; }
if ! command -v fio >/dev/null; then
    echo "installing fio (Debian package)" >&2
    { apt-get install -y -q fio || { apt-get update -q && apt-get install -y -q fio; }; } >/dev/null 2>&1 \
        || { echo "fio is needed: apt-get install fio" >&2; exit 1; }
fi
cargo build --release -q
iolab=${CARGO_TARGET_DIR:-target}/release/iolab
bps=$((rate_mib * 1024 * 1024))

# The disk holding DIR (a partition's whole disk): MAJOR:MINOR.
devnum=$(stat -c '%d' "$dir")
dev="$((devnum >> 8)):$((devnum & 255))"
if [ -e "/sys/dev/block/$dev/partition" ]; then dev=$(cat "/sys/dev/block/$dev/../dev"); fi
name="iolab-truth-$$"
if [ -e /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ]; then
    cg=/sys/fs/cgroup/blkio/$name
    mkdir "$cg"
    echo "$dev $bps" > "$cg/blkio.throttle.read_bps_device"
else
    cg=/sys/fs/cgroup/$name
    mkdir "$cg"
    echo "$dev rbps=$bps" > "$cg/io.max"
fi
work=$(mktemp -d "$dir/.truth-XXXXXX")
db=$work/store.db
trap 'rm -rf "$work"; rmdir "$cg" 2>/dev/null || true' EXIT
inside() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"; }

cat > "$work/1proc.fio" <<FIO
[global]
filename=$work/fio.dat
size=512m
bs=1m
ioengine=psync
[w]
rw=write
end_fsync=1
[r]
stonewall
rw=read
invalidate=1
FIO
sed -e '/^\[w\]/,/^\[r\]/{/^\[r\]/!d}' -e '/stonewall/d' "$work/1proc.fio" > "$work/cold.fio"

ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / 1e6:8.1f} MB/s  {float(sys.argv[1]) / $bps:.3f}')" "$1"; }
evict() { python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"; }
fio_read_bps() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([j for j in d['jobs'] if j['read']['io_bytes']][0]['read']['bw_bytes'])" "$1"; }

echo "throttle: $rate_mib MiB/s reads on $dev ($(python3 -c "print($bps / 1e6)") MB/s); $n rounds"
for round in $(seq 1 "$n"); do
    inside "$iolab" run --dir "$work" --db "$db" --quiet --json --op write,read:cold --size 512MiB --bs 1MiB \
        --sync end --reps 1 > "$work/iolab.json"
    read -r whole steady < <(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['points'][0]['phases'][1]['repetitions'][0]
print(r['max_sar_bytes_per_s'], (r.get('rate') or {}).get('steady', {}).get('bytes_per_s', 0))" "$work/iolab.json")
    echo "round $round  iolab whole   $(ratio "$whole")"
    echo "round $round  iolab steady  $(ratio "$steady")"
    rm -f "$work/fio.dat"
    inside fio --output-format=json "$work/1proc.fio" > "$work/fio1.json"
    echo "round $round  fio-1proc     $(ratio "$(fio_read_bps "$work/fio1.json")")"
    evict "$work/fio.dat"
    inside fio --output-format=json "$work/cold.fio" > "$work/fio2.json"
    echo "round $round  fio-cold      $(ratio "$(fio_read_bps "$work/fio2.json")")"
done
