#!/usr/bin/env bash
# How rank 0 gathers one reply per rank, three ways against each other on the same ranks of
# this host (bench/gather.c): one receive per rank in rank order (`flat`, what iolab does for
# traced phases and phases with I/O-server ranks), a binomial tree of point-to-point messages
# (`tree`, the shape of iolab's gather of every other phase), and MPI_Gather of the sizes then
# MPI_Gatherv of the bytes (`gatherv`); and two ways to sum the ranks' latency histograms:
# sparse (value, count) lists merged up the tree (`merge`, what iolab does) and MPI_Reduce of
# every rank's whole array of counters (`reduce`). Per rank count, per method, min / median /
# max microseconds at rank 0 from a barrier to holding every byte (checked), over ROUNDS
# rounds in a rotating order after a warm-up round. Ranks beyond the cores are oversubscribed.
#
#   bench/gather.sh [--ranks "16 64 256"] [--bytes 340] [--rounds 30] [--buckets 32768]
#                   [--filled 200]
#     --bytes B     one reply (340: a worker's figures as rank 0 receives them, docs/mpi.md)
#     --buckets N   a histogram's counters (32768 of 8 bytes: iolab's 256 KiB); 0: no histograms
#     --filled F    the counters of each rank's histogram that are not zero
#
# Needs Open MPI (mpicc, mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="16 64 256" bytes=340 rounds=30 buckets=32768 filled=200
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --buckets) buckets=$2; shift 2 ;;
    --filled) filled=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown argument $1 (bench/gather.sh --help)" >&2; exit 2 ;;
    esac
done
. bench/lib.sh
need_open_mpi
tmp=$(mktemp -d /tmp/iolab-bench-gather.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -Wall -o "$tmp/gather" bench/gather.c
asroot=()
[ "$(id -u)" != 0 ] || asroot=(--allow-run-as-root)
hist=()
[ "$buckets" = 0 ] || hist=("$buckets" "$filled")
echo "machine: $(nproc) CPUs, $mpi_version; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $ranks; do
    mpirun "${asroot[@]}" --oversubscribe --bind-to none -np "$n" "$tmp/gather" "$bytes" "$rounds" "${hist[@]}" |
        { [ "$n" = "${ranks%% *}" ] && cat || tail -n +2; }
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
