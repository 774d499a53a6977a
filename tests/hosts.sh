#!/usr/bin/env bash
# Three simulated hosts on this machine, for the MPI tests (docs/mpi.md): each host h1, h2, h3
# is a network namespace with its own host name and machine id, an `eth0` on a private /24 that
# exists only inside these namespaces, and a node-local disk (an ext4 image) mounted at
# /mnt/node inside it; /var/tmp/iolab-hosts/shared, outside them, stands in for the shared
# parallel file system (or a real one: `up --fs`).
#
#   tests/hosts.sh up                   make them (idempotent); prints what it made
#   tests/hosts.sh up --fs NAME         and a distributed file system over them, mounted on
#                                       every host: moosefs at /mnt/moosefs, glusterfs at
#                                       /mnt/glusterfs (tests/dfs.sh), cephfs at /mnt/cephfs
#                                       (tests/ceph.sh); repeat --fs for several
#   tests/hosts.sh up --slurm           and a Slurm cluster over them (tests/slurm.sh):
#                                       slurmctld on h1, slurmd and munged on every host,
#                                       each host with a private /tmp; composes with --fs
#   tests/hosts.sh down                 remove exactly what `up` made (idempotent), Slurm
#                                       and file systems first
#   tests/hosts.sh slurm CMD...         a Slurm client command on h1 (srun, sbatch, salloc,
#                                       sinfo, scontrol...) with the cluster's SLURM_CONF
#   tests/hosts.sh status               exit 0 when all three are up
#   tests/hosts.sh run HOST CMD...      run a command on a host
#   tests/hosts.sh mpirun ARGS...       Open MPI's mpirun across the hosts (2 slots each)
#   tests/hosts.sh mpiexec ARGS...      MPICH's mpiexec across the hosts (2 slots each)
#   tests/hosts.sh ssh [OPTS] HOST CMD  how the launchers enter a host (a stand-in for ssh)
#   tests/hosts.sh shared               print the shared directory
#   tests/hosts.sh lock CMD...          run CMD holding the hosts' lock (see below)
#
# One user of the hosts at a time: `up`, `down` and `lock` hold an exclusive flock on
# /var/tmp/iolab-hosts.lock (a file outside the state directory, so `down` keeps it) and wait
# for it when another process holds it. A process that holds the lock for a longer span (a
# test bringing the hosts up, using and taking them down) names it in IOLAB_HOSTS_LOCK as
# PID:FD (a process and its descriptor on the lock file holding the flock); calls under it
# see that the lock is held there and do not wait for it. `lock` sets it for its command.
#
# Needs root, `ip netns`, unshare, nsenter and mkfs.ext4. Without them it prints one line
# starting with `skip:` and exits 77, which the tests take as a skip.
set -euo pipefail

STATE=/var/tmp/iolab-hosts
NET=10.213.77            # the hosts' /24: routed nowhere, unreachable from the root namespace
HOSTS=(h1 h2 h3)
BRIDGE_NS=iolab-hbr
SELF=$(readlink -f "$0")
LOCK=/var/tmp/iolab-hosts.lock

skip() {
    echo "skip: $*" >&2
    exit 77
}

need() {
    [ "$(id -u)" = 0 ] || skip "simulated hosts need root (network namespaces and mounts)"
    for c in ip unshare nsenter mkfs.ext4 mount; do
        command -v "$c" >/dev/null 2>&1 || skip "simulated hosts need $c"
    done
}

# True when IOLAB_HOSTS_LOCK names a live descriptor on the lock file that holds the flock.
lock_held() {
    local mark=${IOLAB_HOSTS_LOCK:-} pid fd
    [[ $mark =~ ^([0-9]+):([0-9]+)$ ]] || return 1
    pid=${BASH_REMATCH[1]}
    fd=${BASH_REMATCH[2]}
    [ "$(readlink "/proc/$pid/fd/$fd" 2>/dev/null)" = "$LOCK" ] || return 1
    grep -Eq '^lock:.*FLOCK +ADVISORY +WRITE' "/proc/$pid/fdinfo/$fd" 2>/dev/null
}

# Takes the hosts' lock on descriptor 9 of this shell, unless the caller holds it already. The
# lock goes when this shell ends; daemons started here must not inherit descriptor 9.
take_lock() {
    lock_held && return 0
    exec 9>>"$LOCK"
    if ! flock -n 9; then
        echo "waiting for the simulated hosts: another process holds $LOCK" >&2
        flock 9
    fi
    export IOLAB_HOSTS_LOCK="$$:9"
}

holder_pid() { cat "$STATE/$1.pid" 2>/dev/null || true; }

alive() {
    local pid
    pid=$(holder_pid "$1")
    [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -q "sleep" "/proc/$pid/cmdline" 2>/dev/null
}

up() {
    local fs=() slurm=false
    while [ $# -gt 0 ]; do
        case $1 in
        --fs) [ $# -ge 2 ] || { echo "usage: $SELF up [--fs moosefs|glusterfs|cephfs]... [--slurm]" >&2; exit 2; }; fs+=("$2"); shift 2 ;;
        --fs=*) fs+=("${1#--fs=}"); shift ;;
        --slurm) slurm=true; shift ;;
        *) echo "usage: $SELF up [--fs moosefs|glusterfs|cephfs]... [--slurm]" >&2; exit 2 ;;
        esac
    done
    local f
    for f in "${fs[@]}"; do
        [[ " ${FS_NAMES[*]} " == *" $f "* ]] || { echo "unknown file system '$f' (--fs takes: ${FS_NAMES[*]})" >&2; exit 2; }
    done
    need
    $slurm && slurm_need
    take_lock
    # Can namespaces be made here at all (containers often forbid it)? Ask before making anything.
    unshare --uts --mount true 2>/dev/null || skip "cannot make UTS and mount namespaces here"
    ip netns add "$BRIDGE_NS" 2>/dev/null || ip netns list | grep -w "$BRIDGE_NS" >/dev/null \
        || skip "cannot make network namespaces here"
    mkdir -p "$STATE/shared"
    chmod 1777 "$STATE/shared"
    ip -n "$BRIDGE_NS" link show br0 >/dev/null 2>&1 || ip -n "$BRIDGE_NS" link add br0 type bridge
    ip -n "$BRIDGE_NS" link set br0 up
    # A safety net: the hosts' network is unreachable from the root namespace.
    ip route replace unreachable "$NET.0/24"
    : >"$STATE/hosts"
    local i=0
    for h in "${HOSTS[@]}"; do
        i=$((i + 1))
        echo "$NET.$i $h" >>"$STATE/hosts"
    done
    echo "127.0.0.1 localhost" >>"$STATE/hosts"
    i=0
    for h in "${HOSTS[@]}"; do
        i=$((i + 1))
        local ns="iolab-$h"
        ip netns list | grep -w "$ns" >/dev/null || ip netns add "$ns"
        if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
            ip link add "ih-$h" netns "$BRIDGE_NS" type veth peer name eth0 netns "$ns"
            ip -n "$BRIDGE_NS" link set "ih-$h" master br0 up
            ip -n "$ns" addr add "$NET.$i/24" dev eth0
        fi
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        [ -f "$STATE/$h.img" ] || { truncate -s 256M "$STATE/$h.img" && mkfs.ext4 -q -F "$STATE/$h.img"; }
        # A machine id of its own, as a real host has (results tell hosts apart by it).
        [ -s "$STATE/$h.machine-id" ] || od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$STATE/$h.machine-id"
        if ! alive "$h"; then
            # The holder keeps the host's namespaces (UTS, mount) alive; its mounts stay inside.
            ip netns exec "$ns" unshare --uts --mount --propagation private sh -c "
                hostname $h
                mkdir -p /mnt/node
                mount -o loop '$STATE/$h.img' /mnt/node
                chmod 1777 /mnt/node
                mount --bind '$STATE/hosts' /etc/hosts
                if [ -e /etc/machine-id ]; then mount --bind '$STATE/$h.machine-id' /etc/machine-id; fi
                exec sleep infinity" </dev/null >/dev/null 2>&1 9>&- &
            echo $! >"$STATE/$h.pid"
        fi
    done
    # Wait until every host has its name and its disk.
    for h in "${HOSTS[@]}"; do
        local tries=0
        until [ "$(run_on "$h" hostname 2>/dev/null)" = "$h" ] && run_on "$h" mountpoint -q /mnt/node; do
            tries=$((tries + 1))
            [ $tries -lt 100 ] || { echo "host $h did not come up" >&2; exit 1; }
            sleep 0.05
        done
    done
    printf '%s slots=2\n' "${HOSTS[@]}" >"$STATE/hostfile.openmpi"
    printf '%s:2\n' "${HOSTS[@]}" >"$STATE/hostfile.mpich"
    printf '#!/bin/sh\nexec %q ssh "$@"\n' "$SELF" >"$STATE/ssh"
    chmod +x "$STATE/ssh"
    i=0
    for h in "${HOSTS[@]}"; do
        i=$((i + 1))
        echo "$h: holder $(holder_pid "$h"), address $NET.$i, node disk /mnt/node ($STATE/$h.img)"
    done
    echo "shared directory: $STATE/shared"
    for f in "${fs[@]}"; do
        fs_up "$f"
    done
    if $slurm; then
        slurm_up
    fi
    echo "use: $SELF run h2 ls /mnt/node | $SELF mpirun -np 6 PROG | $SELF mpiexec -n 6 PROG | $SELF down"
}

down() {
    [ "$(id -u)" = 0 ] || skip "simulated hosts need root"
    take_lock
    slurm_down
    fs_down
    for h in "${HOSTS[@]}"; do
        local pid
        pid=$(holder_pid "$h")
        if [ -n "$pid" ] && alive "$h"; then
            kill "$pid" 2>/dev/null || true
            # Done once it is a zombie: its mounts (and so its loop device) are released by then,
            # and the wait for init to reap it can take seconds.
            while [ -d "/proc/$pid" ] && ! grep -q '^State:.Z' "/proc/$pid/status" 2>/dev/null; do
                sleep 0.02
            done
        fi
        rm -f "$STATE/$h.pid"
        ip netns del "iolab-$h" 2>/dev/null || true
    done
    ip netns del "$BRIDGE_NS" 2>/dev/null || true
    if ip route show | grep "^unreachable $NET.0/24" >/dev/null; then
        ip route del unreachable "$NET.0/24" 2>/dev/null || true
    fi
    rm -rf "$STATE"
}

status() {
    for h in "${HOSTS[@]}"; do
        alive "$h" || return 1
    done
}

run_on() {
    local h=$1
    shift
    local pid
    pid=$(holder_pid "$h")
    [ -n "$pid" ] || { echo "no host $h (run: $SELF up)" >&2; return 1; }
    nsenter -t "$pid" -n -m -u --wd="$PWD" -- sh -c "$*"
}

# The stand-in for ssh: skips ssh's options, then runs the command on the host.
ssh_stand_in() {
    while [ $# -gt 0 ]; do
        case $1 in
        -[1246AaCfGgKkMNnqsTtVvXxYy]*) shift ;;
        -[BbcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
        -*) shift ;;
        *) break ;;
        esac
    done
    [ $# -ge 1 ] || { echo "usage: $SELF ssh [OPTIONS] HOST COMMAND..." >&2; exit 2; }
    local h=$1
    shift
    run_on "$h" "$@"
}

# shellcheck source=tests/dfs.sh
. "$(dirname "$SELF")/dfs.sh"
# shellcheck source=tests/ceph.sh
. "$(dirname "$SELF")/ceph.sh"
# shellcheck source=tests/slurm.sh
. "$(dirname "$SELF")/slurm.sh"

case ${1:-} in
up)
    shift
    up "$@"
    ;;
down) down ;;
status) status ;;
shared) echo "$STATE/shared" ;;
lock)
    shift
    [ $# -ge 1 ] || { echo "usage: $SELF lock COMMAND..." >&2; exit 2; }
    [ "$(id -u)" = 0 ] || skip "simulated hosts need root"
    take_lock
    # Not exec: this shell keeps the lock until the command ends; the command does not hold it.
    "$@" 9>&-
    ;;
run)
    shift
    [ $# -ge 1 ] || { echo "usage: $SELF run HOST COMMAND..." >&2; exit 2; }
    h=$1
    shift
    run_on "$h" "$@"
    ;;
ssh)
    shift
    ssh_stand_in "$@"
    ;;
slurm)
    shift
    [ $# -ge 1 ] || { echo "usage: $SELF slurm COMMAND..." >&2; exit 2; }
    status || skip "the simulated hosts are not up ($SELF up --slurm)"
    args=$(printf ' %q' "$@")
    slurm_run "$args"
    ;;
mpirun)
    shift
    status || skip "the simulated hosts are not up ($SELF up)"
    # mpirun itself starts inside h1: started from the root namespace, ranks cannot reach the
    # hosts. Every host's slots are the same few real cores, which Open MPI cannot know from the
    # hostfile: its ranks yield while they wait (mpi_yield_when_idle) instead of spinning, so
    # they leave the cores to the file systems' daemons and to other work on the machine.
    args=$(printf ' %q' "$@")
    run_on h1 "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --allow-run-as-root \
        --oversubscribe --hostfile $STATE/hostfile.openmpi --mca plm_rsh_agent $STATE/ssh \
        --mca mpi_yield_when_idle 1 \
        --mca btl tcp,vader,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 $args"
    ;;
mpiexec)
    shift
    status || skip "the simulated hosts are not up ($SELF up)"
    args=$(printf ' %q' "$@")
    run_on h1 "mpiexec.mpich -f $STATE/hostfile.mpich -launcher ssh -launcher-exec $STATE/ssh -iface eth0 $args"
    ;;
*)
    sed -n '2,36p' "$SELF"
    exit 2
    ;;
esac
