# Distributed file systems over the simulated hosts, sourced by tests/hosts.sh (`up --fs NAME`,
# `down`). Every host gets a second node-local disk for the servers' data (an ext4 image at
# /mnt/srv inside the host, apart from /mnt/node, which stays the users' own); then:
#
#   moosefs    the master on h1; a chunkserver on every host, its chunks on that host's
#              /mnt/srv; an mfsmount at /mnt/moosefs on every host, in that host's mount
#              namespace (its own FUSE superblock and page cache); goal 1 (one copy of each
#              64 MiB chunk) from the root down.
#   glusterfs  glusterd on every host (its state on tmpfs mounted inside the host over
#              /var/lib/glusterd, /var/log/glusterfs and /run, so the machine's are not
#              touched); a distribute volume `pfs` of one brick per host on /mnt/srv; the FUSE
#              client at /mnt/glusterfs on every host, each from its own host's glusterd.
#   cephfs     a Ceph cluster and ceph-fuse on every host (tests/ceph.sh).
#
# Every daemon runs in the foreground under its host's namespaces, its output in a log and its
# PID in a file under $STATE/fs (brick processes, which glusterd starts, by the PID files they
# write); `down` unmounts the clients, then ends them all by those PIDs at once.

FS_STATE=$STATE/fs
SRV=/mnt/srv
# Each host's server disk: a sparse image, so only what the servers hold takes room on the
# machine's disk. 8 GiB (with one inode per 64 KiB, as many inodes as a 2 GiB image gets by
# default): a benchmark's alternations write some GiB, and MooseFS frees the chunks of a
# removed file only once no mount holds it any more (a file removed through a mount that
# wrote it stays "sustained" while that mount runs; see `up_moosefs`).
SRV_SIZE=8G
FS_NAMES=(moosefs glusterfs cephfs)

# True when the process in PIDFILE is alive (not a zombie) and its command line has WORD.
pid_alive() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
    grep -q '^State:.Z' "/proc/$pid/status" 2>/dev/null && return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -- "$2" >/dev/null
}

# Starts COMMAND on HOST in the foreground, in the background of this shell: its output to
# LOG, its PID to PIDFILE; nothing when that process is alive already. WORD names it in ps.
start_daemon() {
    local pidf=$1 log=$2 word=$3 h=$4
    shift 4
    pid_alive "$pidf" "$word" && return 0
    nsenter -t "$(holder_pid "$h")" -n -m -u -- sh -c "exec $*" </dev/null >>"$log" 2>&1 9>&- &
    echo $! >"$pidf"
}

# Ends the processes in PIDFILES (each `PIDFILE:WORD`): TERM to all at once, KILL to those
# left after 10 s; removes the files.
stop_pids() {
    local pw pids=() i left
    for pw in "$@"; do
        if pid_alive "${pw%%:*}" "${pw##*:}"; then
            pids+=("$(cat "${pw%%:*}")")
            kill "${pids[-1]}" 2>/dev/null || true
        fi
    done
    for i in $(seq 200); do
        left=0
        for pw in "$@"; do
            pid_alive "${pw%%:*}" "${pw##*:}" && left=1
        done
        [ $left = 0 ] && break
        sleep 0.05
    done
    for pw in "$@"; do
        pid_alive "${pw%%:*}" "${pw##*:}" && kill -9 "$(cat "${pw%%:*}")" 2>/dev/null
        rm -f "${pw%%:*}"
    done
    return 0
}

# Waits up to SECONDS of wall time for COMMAND (a shell line) to succeed; fails naming WHAT.
wait_for() {
    local secs=$1 what=$2 cmd=$3 end=$((SECONDS + $1))
    while :; do
        if eval "$cmd" >/dev/null 2>&1; then return 0; fi
        [ $SECONDS -lt $end ] || break
        sleep 0.1
    done
    echo "$what did not happen within $secs s" >&2
    return 1
}

# Fails, naming them, when the mount point DIR on host H holds files while nothing is mounted
# there: something wrote into it while the file system was down, and a FUSE mount refuses a
# directory that is not empty.
empty_mountpoint() {
    local h=$1 dir=$2 left
    left=$(run_on "$h" "mountpoint -q $dir || ls -A $dir 2>/dev/null | head -5 | tr '\n' ' ' | sed 's/ \$//'")
    [ -z "$left" ] || { echo "$dir on $h holds $left while nothing is mounted there (written while the file system was down): remove them, then run up again" >&2; return 1; }
}

# How long a daemon or a mount may take to come up: generous, as a loaded machine (a test suite
# and builds on 2 cores) has taken over 30 s to mount.
UP_SECS=120

# The servers' disk of every host, mounted at /mnt/srv inside it.
srv_up() {
    local h
    for h in "${HOSTS[@]}"; do
        [ -f "$STATE/$h.srv.img" ] || { truncate -s "$SRV_SIZE" "$STATE/$h.srv.img" && mkfs.ext4 -q -F -i 65536 "$STATE/$h.srv.img"; }
        run_on "$h" "mountpoint -q $SRV || { mkdir -p $SRV && mount -o loop '$STATE/$h.srv.img' $SRV; }"
    done
}

up_moosefs() {
    local c h d=$FS_STATE/moosefs master=$NET.1
    for c in mfsmaster mfschunkserver mfsmount mfssetgoal; do
        command -v "$c" >/dev/null 2>&1 || skip "moosefs needs $c (apt-get install moosefs-master moosefs-chunkserver moosefs-client)"
    done
    mkdir -p "$d"
    srv_up
    cat >"$d/master.cfg" <<EOF
WORKING_USER = root
WORKING_GROUP = root
DATA_PATH = $SRV/moosefs/master
EXPORTS_FILENAME = $d/exports.cfg
CHUNKS_LOOP_MIN_TIME = 60
EOF
    echo "* / rw,alldirs,maproot=0" >"$d/exports.cfg"
    run_on h1 "mkdir -p $SRV/moosefs/master && { [ -e $SRV/moosefs/master/metadata.mfs ] || cp /var/lib/mfs/metadata.mfs.empty $SRV/moosefs/master/metadata.mfs; }"
    start_daemon "$d/master.pid" "$d/master.log" mfsmaster h1 mfsmaster -c "$d/master.cfg" -f start
    for h in "${HOSTS[@]}"; do
        cat >"$d/$h.cs.cfg" <<EOF
WORKING_USER = root
WORKING_GROUP = root
DATA_PATH = $SRV/moosefs/cs
HDD_CONF_FILENAME = $d/$h.hdd.cfg
HDD_LEAVE_SPACE_DEFAULT = 16MiB
MASTER_HOST = $master
EOF
        echo "$SRV/moosefs/chunks" >"$d/$h.hdd.cfg"
        run_on "$h" "mkdir -p $SRV/moosefs/cs $SRV/moosefs/chunks"
        start_daemon "$d/$h.cs.pid" "$d/$h.cs.log" mfschunkserver "$h" mfschunkserver -c "$d/$h.cs.cfg" -f start
    done
    for h in "${HOSTS[@]}"; do
        wait_for $UP_SECS "the chunkserver on $h connecting to the master" "grep -q 'connected to Master' '$d/$h.cs.log'"
    done
    for h in "${HOSTS[@]}"; do
        run_on "$h" "mkdir -p /mnt/moosefs"
        empty_mountpoint "$h" /mnt/moosefs
        start_daemon "$d/$h.mount.pid" "$d/$h.mount.log" mfsmount "$h" mfsmount /mnt/moosefs -f -H "$master"
    done
    for h in "${HOSTS[@]}"; do
        # Mounted, and the master counts every chunkserver's space (statfs's total).
        wait_for $UP_SECS "the moosefs mount on $h" \
            "[ \"\$(run_on $h 'mountpoint -q /mnt/moosefs && stat -f -c %b /mnt/moosefs')\" -gt 0 ]"
    done
    # Goal 1: one copy of each chunk. Trash time 0 (inherited by everything made below): a
    # removed file is not kept in MooseFS's trash for a day, the default. A chunk loop of 60 s
    # (300 s by default; 60 is the least MooseFS 3.0 takes): the master's pass over its chunks,
    # which deletes the chunks no file holds, comes round sooner. A removed file that a mount
    # still holds keeps its chunks all the same (see SRV_SIZE).
    run_on h1 "mfssetgoal 1 /mnt/moosefs >/dev/null && mfssettrashtime 0 /mnt/moosefs >/dev/null"
    echo "moosefs: master on h1 ($master:9421), a chunkserver on every host (chunks on its $SRV), mounted at /mnt/moosefs on every host; goal 1, trash time 0"
}

# The clients' mounts of file system NAME at /mnt/NAME, unmounted on every host. A client
# whose servers are gone can hold `umount` for ever (it writes back what the mount holds, and
# no server answers; a task waiting for writeback takes no signal): after UMOUNT_SECS the
# mount is detached (`umount -l`) and its client process ended, which fails what it held.
UMOUNT_SECS=${UMOUNT_SECS:-20}
unmount_all() {
    local h name=$1 pidf i end
    local -A upid=()
    for h in "${HOSTS[@]}"; do
        pid_alive "$FS_STATE/$name/$h.mount.pid" "$2" || continue
        run_on "$h" "umount /mnt/$name" 2>/dev/null &
        upid[$h]=$!
    done
    end=$((SECONDS + UMOUNT_SECS))
    for h in "${!upid[@]}"; do
        while [ -d "/proc/${upid[$h]}" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
    done
    for h in "${!upid[@]}"; do
        i=${upid[$h]}
        [ ! -d "/proc/$i" ] && wait "$i" && continue
        echo "$name: umount /mnt/$name on $h failed or took over $UMOUNT_SECS s: detached, its client ended" >&2
        run_on "$h" "umount -l /mnt/$name" 2>/dev/null || true
        pidf=$FS_STATE/$name/$h.mount.pid
        kill -9 "$(cat "$pidf")" 2>/dev/null || true
        stop_pids "$pidf:$2"
        wait "$i" 2>/dev/null || true
    done
}

up_glusterfs() {
    local c h d=$FS_STATE/glusterfs
    for c in glusterd gluster glusterfs; do
        command -v "$c" >/dev/null 2>&1 || skip "glusterfs needs $c (apt-get install glusterfs-server glusterfs-client)"
    done
    mkdir -p "$d"
    srv_up
    # glusterd configures geo-replication at start by running gsyncd (Python) some twenty
    # times: 25 s on a loaded 2-core machine. Inside the hosts only, a shell stand-in that
    # gives its version and accepts the rest is bound over it (no geo-replication here).
    local gsyncd
    gsyncd=$(compgen -G "/usr/lib/*/glusterfs/gsyncd" | head -1 || true)
    printf '#!/bin/sh\n[ "$1" = --version ] && echo "gsyncd.py (stand-in for the simulated hosts)"\nexit 0\n' >"$d/gsyncd"
    chmod +x "$d/gsyncd"
    for h in "${HOSTS[@]}"; do
        run_on "$h" "for m in /var/lib/glusterd /var/log/glusterfs /run; do
                mountpoint -q \$m || mount -t tmpfs -o size=64m,mode=755 iolab-$h \$m; done
            if [ -n '$gsyncd' ] && ! mountpoint -q '$gsyncd'; then mount --bind '$d/gsyncd' '$gsyncd'; fi
            mkdir -p $SRV/gluster/brick /mnt/glusterfs"
        start_daemon "$d/$h.glusterd.pid" "$d/$h.glusterd.log" glusterd "$h" glusterd -N
    done
    for h in "${HOSTS[@]}"; do
        wait_for $UP_SECS "glusterd on $h answering" "run_on $h 'gluster --mode=script pool list'"
    done
    for h in h2 h3; do
        run_on h1 "gluster --mode=script peer probe $h" >/dev/null
    done
    # Peers connect pairwise: a volume is created only once every host sees every other
    # (h1 seeing all three is not enough: "Staging failed on h2. Error: Host h3 not connected").
    for h in "${HOSTS[@]}"; do
        wait_for $UP_SECS "the glusterfs peers connecting, seen from $h" \
            "[ \"\$(run_on $h 'gluster --mode=script pool list' | grep -c Connected)\" = ${#HOSTS[@]} ]"
    done
    if ! run_on h1 "gluster --mode=script volume info pfs" >/dev/null 2>&1; then
        run_on h1 "gluster --mode=script volume create pfs $(printf "%s:$SRV/gluster/brick " "${HOSTS[@]}") force" >/dev/null
    fi
    if ! run_on h1 "gluster --mode=script volume info pfs" | grep '^Status: Started' >/dev/null; then
        run_on h1 "gluster --mode=script volume start pfs" >/dev/null
    fi
    for h in "${HOSTS[@]}"; do
        wait_for $UP_SECS "the brick on $h" "run_on $h 'cat /run/gluster/vols/pfs/*.pid' >'$d/$h.brick.pid' && pid_alive '$d/$h.brick.pid' glusterfsd"
        empty_mountpoint "$h" /mnt/glusterfs
        start_daemon "$d/$h.mount.pid" "$d/$h.mount.log" glusterfs "$h" \
            glusterfs -N --volfile-server="$h" --volfile-id=pfs --log-file=/var/log/glusterfs/client.log /mnt/glusterfs
    done
    for h in "${HOSTS[@]}"; do
        wait_for $UP_SECS "the glusterfs mount on $h" \
            "[ \"\$(run_on $h 'mountpoint -q /mnt/glusterfs && stat -f -c %b /mnt/glusterfs')\" -gt 0 ]"
    done
    echo "glusterfs: glusterd on every host, distribute volume pfs of one brick per host ($SRV/gluster/brick), mounted at /mnt/glusterfs on every host"
}

# `up --fs NAME`: the hosts are up; bring up the file system (idempotent).
fs_up() {
    local name=$1 t0=$EPOCHREALTIME
    [ -c /dev/fuse ] || skip "$name needs FUSE (/dev/fuse is missing)"
    case $name in
    moosefs) up_moosefs ;;
    glusterfs) up_glusterfs ;;
    cephfs) up_cephfs ;;
    esac
    echo "$name up in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
}

# Before the hosts go: every file system's clients unmounted, then every daemon ended (all at
# once: each takes a second or more to go).
fs_down() {
    local f h pw=()
    [ -d "$FS_STATE/cephfs" ] && down_cephfs
    [ -d "$FS_STATE/moosefs" ] && unmount_all moosefs mfsmount
    [ -d "$FS_STATE/glusterfs" ] && unmount_all glusterfs glusterfs
    for h in "${HOSTS[@]}"; do
        pw+=("$FS_STATE/moosefs/$h.mount.pid:mfsmount" "$FS_STATE/moosefs/$h.cs.pid:mfschunkserver")
        pw+=("$FS_STATE/glusterfs/$h.mount.pid:glusterfs" "$FS_STATE/glusterfs/$h.brick.pid:glusterfsd")
        pw+=("$FS_STATE/glusterfs/$h.glusterd.pid:glusterd")
    done
    pw+=("$FS_STATE/moosefs/master.pid:mfsmaster")
    stop_pids "${pw[@]}"
    rm -rf "$FS_STATE"
}
