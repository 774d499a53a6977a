# CephFS over the simulated hosts, sourced by tests/hosts.sh (`up --fs cephfs`, `down`), beside
# the file systems of tests/dfs.sh (whose helpers it uses):
#
#   cephfs     a Ceph cluster run by hand, no cephadm or containers: mon.a and mgr.x on h1, one
#              BlueStore OSD per host on a plain file in that host's /mnt/srv (osd.0 on h1,
#              osd.1 on h2, osd.2 on h3), mds.a on h2, size-1 pools (cephfs_metadata,
#              cephfs_data) and the file system `cephfs`; ceph-fuse at /mnt/cephfs on every
#              host with its defaults (the object cacher on, client_oc), and on h3 a second
#              ceph-fuse at /mnt/cephfs-nooc with --client_oc=false. Its ceph.conf and the admin
#              keyring are in $FS_STATE/cephfs (`CEPH_CONF=... ceph -s` on h1); the daemons'
#              admin sockets in $FS_STATE/cephfs/run (`ceph --admin-daemon .../ceph-osd.0.asok
#              perf dump` from anywhere).
#
# Every daemon runs in the foreground (`-f`), its PID in a file. `down`: the clients first (a
# client whose MDS is gone would hang: its FUSE connection is aborted, then it is killed), then
# every daemon by its PID at once.

CEPH_MOUNTS=("h1:/mnt/cephfs" "h2:/mnt/cephfs" "h3:/mnt/cephfs" "h3:/mnt/cephfs-nooc:--client_oc=false")

# `ceph ARGS` on h1 with the cluster's configuration.
ceph_c() {
    run_on h1 "CEPH_CONF=$FS_STATE/cephfs/ceph.conf timeout 60 ceph $*"
}

up_cephfs() {
    local c h d=$FS_STATE/cephfs i fsid u id m host dir opt
    for c in ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph ceph-authtool monmaptool; do
        command -v "$c" >/dev/null 2>&1 || skip "cephfs needs $c (apt-get install ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common)"
    done
    mkdir -p "$d/run" "$d/log" "$d/keys" "$d/mgr" "$d/mds" "$d/crash"
    srv_up
    if [ ! -s "$d/ceph.conf" ]; then
        fsid=$(cat /proc/sys/kernel/random/uuid)
        # `$cluster`, `$id`, `$name`, `$pid` are Ceph's own metavariables.
        cat >"$d/ceph.conf" <<EOF
[global]
fsid = $fsid
mon_host = $NET.1
mon_initial_members = a
public_network = $NET.0/24
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = $d/run
crash_dir = $d/crash
admin_socket = $d/run/\$cluster-\$name.asok
log_file = $d/log/\$cluster-\$name.log
mon_cluster_log_file = $d/log/\$cluster.log
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 10
osd_crush_chooseleaf_type = 0
mgr_stats_period = 1
mon_mgr_digest_period = 1
[mon]
mon_data = $SRV/ceph/mon/\$cluster-\$id
keyring = \$mon_data/keyring
mon_memory_target = 268435456
[mgr]
mgr_data = $d/mgr/\$cluster-\$id
keyring = \$mgr_data/keyring
[osd]
osd_data = $SRV/ceph/osd/\$cluster-\$id
keyring = \$osd_data/keyring
osd_objectstore = bluestore
bluestore_block_size = 4294967296
osd_memory_target = 939524096
[mds]
mds_data = $d/mds/\$cluster-\$id
keyring = \$mds_data/keyring
mds_cache_memory_limit = 134217728
[client]
keyring = $d/keys/ceph.client.admin.keyring
admin_socket = $d/run/\$cluster-\$name.\$pid.asok
log_file = $d/log/\$cluster-\$name.\$pid.log
# A client that cannot reach its MDS ends within 5 s of a SIGTERM (30 s by default).
client_shutdown_timeout = 5
EOF
        local k=$d/keys
        ceph-authtool --create-keyring "$k/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
        ceph-authtool --create-keyring "$k/ceph.client.admin.keyring" --gen-key -n client.admin \
            --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
        ceph-authtool "$k/mon.keyring" --import-keyring "$k/ceph.client.admin.keyring" >/dev/null
        monmaptool --create --addv a "[v2:$NET.1:3300,v1:$NET.1:6789]" --fsid "$fsid" "$k/monmap" >/dev/null
        # The mon's mkfs finds its address among the host's interfaces: on h1.
        run_on h1 "mkdir -p $SRV/ceph/mon && CEPH_CONF=$d/ceph.conf ceph-mon --mkfs -i a --monmap $k/monmap --keyring $k/mon.keyring" >>"$d/log/mkfs.log" 2>&1
    fi
    start_daemon "$d/mon.pid" "$d/log/mon.out" ceph-mon h1 ceph-mon -c "$d/ceph.conf" -f -i a
    wait_for $UP_SECS "the ceph mon answering" "ceph_c -s"
    if [ ! -s "$d/mgr/ceph-x/keyring" ]; then
        mkdir -p "$d/mgr/ceph-x"
        ceph_c "auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' -o $d/mgr/ceph-x/keyring" >/dev/null
    fi
    start_daemon "$d/mgr.pid" "$d/log/mgr.out" ceph-mgr h1 ceph-mgr -c "$d/ceph.conf" -f -i x
    # One OSD per host, its id the host's index from 0; made in parallel (mkfs takes seconds).
    local mk=()
    i=0
    for h in "${HOSTS[@]}"; do
        dir=$SRV/ceph/osd/ceph-$i
        if ! run_on "$h" "[ -s $dir/whoami ]"; then
            u=$(cat /proc/sys/kernel/random/uuid)
            id=$(ceph_c "osd new $u")
            [ "$id" = "$i" ] || { echo "ceph: osd new gave id '$id', expected $i" >&2; return 1; }
            run_on "$h" "mkdir -p $dir"
            ceph_c "mon getmap -o $d/keys/osd.$i.monmap" 2>/dev/null
            ceph_c "auth get-or-create osd.$i mon 'allow profile osd' mgr 'allow profile osd' osd 'allow *' -o $d/keys/osd.$i.keyring" >/dev/null
            run_on "$h" "cp $d/keys/osd.$i.keyring $dir/keyring && CEPH_CONF=$d/ceph.conf ceph-osd -i $i --mkfs --osd-uuid $u --monmap $d/keys/osd.$i.monmap" >>"$d/log/mkfs.log" 2>&1 &
            mk+=($!)
        fi
        i=$((i + 1))
    done
    for c in "${mk[@]}"; do
        wait "$c" || { echo "ceph: an OSD's mkfs failed ($d/log/mkfs.log)" >&2; return 1; }
    done
    i=0
    for h in "${HOSTS[@]}"; do
        start_daemon "$d/osd.$i.pid" "$d/log/osd.$i.out" ceph-osd "$h" ceph-osd -c "$d/ceph.conf" -f -i $i
        i=$((i + 1))
    done
    if [ ! -s "$d/mds/ceph-a/keyring" ]; then
        mkdir -p "$d/mds/ceph-a"
        ceph_c "auth get-or-create mds.a mon 'allow profile mds' osd 'allow rwx' mds 'allow *' mgr 'allow profile mds' -o $d/mds/ceph-a/keyring" >/dev/null
    fi
    start_daemon "$d/mds.pid" "$d/log/mds.out" ceph-mds h2 ceph-mds -c "$d/ceph.conf" -f -i a
    if ! ceph_c "fs ls" | grep -q "name: cephfs"; then
        ceph_c "osd pool create cephfs_metadata 8" >/dev/null 2>&1
        ceph_c "osd pool create cephfs_data 8" >/dev/null 2>&1
        ceph_c "fs new cephfs cephfs_metadata cephfs_data" >/dev/null 2>&1
        ceph_c "fs set cephfs standby_count_wanted 0" >/dev/null
    fi
    wait_for $UP_SECS "the ceph MDS active" "ceph_c 'mds stat' | grep -q 'up:active'"
    wait_for $UP_SECS "every OSD up" "ceph_c 'osd stat' | grep -q '${#HOSTS[@]} osds: ${#HOSTS[@]} up'"
    for m in "${CEPH_MOUNTS[@]}"; do
        IFS=: read -r host dir opt <<<"$m"
        run_on "$host" "mkdir -p $dir"
        empty_mountpoint "$host" "$dir"
        start_daemon "$d/$host${dir//\//.}.mount.pid" "$d/log/$host${dir//\//.}.mount.out" ceph-fuse "$host" \
            ceph-fuse -f -c "$d/ceph.conf" -n client.admin $opt "$dir"
    done
    for m in "${CEPH_MOUNTS[@]}"; do
        IFS=: read -r host dir opt <<<"$m"
        wait_for $UP_SECS "the cephfs mount $dir on $host" \
            "[ \"\$(run_on $host 'mountpoint -q $dir && stat -f -c %b $dir')\" -gt 0 ]"
    done
    wait_for $UP_SECS "the ceph cluster healthy" "ceph_c health | grep -q HEALTH_OK"
    echo "cephfs: mon.a and mgr.x on h1, an OSD per host ($SRV/ceph/osd, BlueStore), mds.a on h2, size-1 pools; ceph-fuse at /mnt/cephfs on every host, and at /mnt/cephfs-nooc on h3 with --client_oc=false; CEPH_CONF=$d/ceph.conf"
}

# A shell line printing the device (MAJOR:MINOR) of the ceph-fuse mount at DIR, from the mount
# table alone; nothing when none is there.
ceph_mount_dev() {
    echo "awk '{ for (i = 7; i <= NF; i++) if (\$i == \"-\") break } \$5 == \"$1\" && \$(i + 1) == \"fuse.ceph-fuse\" { print \$3 }' /proc/self/mountinfo"
}

# The clients, then the daemons. A client is unmounted; one that does not let go within 10 s
# (its MDS gone: requests wait in it, and it waits 30 s before it ends on a SIGTERM) has its FUSE
# connection aborted, which fails what waits on it, and is killed.
down_cephfs() {
    local d=$FS_STATE/cephfs m host dir opt pidf dev pw=() i
    local -A up=()
    for m in "${CEPH_MOUNTS[@]}"; do
        IFS=: read -r host dir opt <<<"$m"
        pidf=$d/$host${dir//\//.}.mount.pid
        pid_alive "$pidf" ceph-fuse || continue
        run_on "$host" "umount $dir" 2>/dev/null &
        up[$m]=$!
    done
    for m in "${!up[@]}"; do
        i=0
        while [ -d "/proc/${up[$m]}" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        IFS=: read -r host dir opt <<<"$m"
        pidf=$d/$host${dir//\//.}.mount.pid
        # Nothing here may touch the mount itself (a stat would hang as the umount does): its
        # device from the host's mount table, its connection by that device's minor number.
        dev=$(run_on "$host" "$(ceph_mount_dev "$dir")")
        if [ -d "/proc/${up[$m]}" ] || [ -n "$dev" ]; then
            echo "cephfs: $dir on $host did not unmount within 10 s: its FUSE connection aborted, its client killed" >&2
            run_on "$host" "mountpoint -q /sys/fs/fuse/connections || mount -t fusectl fusectl /sys/fs/fuse/connections
                [ -z '$dev' ] || echo 1 > /sys/fs/fuse/connections/${dev#*:}/abort
                umount -l $dir" 2>/dev/null || true
            kill -9 "$(cat "$pidf")" 2>/dev/null || true
        fi
        wait "${up[$m]}" 2>/dev/null || true
        pw+=("$pidf:ceph-fuse")
    done
    stop_pids "${pw[@]}"
    # The daemons need no clean stop (the cluster is thrown away with the hosts): KILL at once.
    pw=()
    for pidf in "$d"/mds.pid "$d"/osd.*.pid "$d"/mgr.pid "$d"/mon.pid; do
        [ -e "$pidf" ] || continue
        pid_alive "$pidf" ceph- && kill -9 "$(cat "$pidf")" 2>/dev/null
        pw+=("$pidf:ceph-")
    done
    stop_pids "${pw[@]}"
}
