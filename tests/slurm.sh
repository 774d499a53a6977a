# A Slurm cluster over the simulated hosts, sourced by tests/hosts.sh (`up --slurm`, `down`,
# `slurm CMD...`): munged on every host (one key; each host's own daemon behind one socket path,
# a directory of the host's own bound over it), slurmctld on h1, slurmd on every host (node
# names h1-h3, 2 CPUs each, one partition `main`), the clients run on h1. Every host gets a
# private /tmp and /dev/shm (tmpfs, mounted inside it): Slurm's pmix plugin makes a directory
# per step under /tmp on every node, named the same on each, so a /tmp the hosts share fails
# every `srun --mpi=pmix` step. mpi.conf sets `PMIxCollFence=ring`: Slurm's default tree fence
# of PMIx is no barrier across nodes, and Open MPI ranks released by it early crash now and
# then in MPI_Init under load.
#
# Every daemon runs in the foreground under its host's namespaces (start_daemon of
# tests/dfs.sh), its output in a log and its PID in a file under $SLURM_STATE; `down` cancels
# the jobs, ends the daemons by those PIDs, then the job steps' slurmstepd processes they left
# (found in the hosts' network namespaces, which nothing else runs in).

SLURM_STATE=$STATE/slurm
SLURM_CONF_FILE=$SLURM_STATE/etc/slurm.conf
SLURM_CLUSTER=iolab
MUNGE_SOCKET=$SLURM_STATE/run/munge/munge.socket.2

slurm_need() {
    local c
    for c in slurmctld slurmd srun sbatch salloc sinfo scontrol scancel munged mungekey; do
        command -v "$c" >/dev/null 2>&1 || skip "slurm needs $c (apt-get install slurm-wlm munge)"
    done
}

slurm_config() {
    local d=$SLURM_STATE h i=0
    mkdir -p "$d/etc" "$d/run/munge" "$d/state" "$d/log"
    for h in "${HOSTS[@]}"; do
        mkdir -p "$d/spool/$h" "$d/hosts.d/$h/munge" "$d/hosts.d/$h/lib"
    done
    # munged wants every directory on its socket's path searchable by all, and none writable
    # by others.
    chmod 755 "$d" "$d/run" "$d/run/munge" "$d/hosts.d" "$d"/hosts.d/*/munge
    [ -s "$d/munge.key" ] || mungekey --create --keyfile="$d/munge.key" >/dev/null
    chmod 600 "$d/munge.key"
    {
        echo "ClusterName=$SLURM_CLUSTER"
        echo "SlurmctldHost=h1($NET.1)"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$MUNGE_SOCKET"
        echo "StateSaveLocation=$d/state"
        echo "SlurmdSpoolDir=$d/spool/%n"
        echo "SlurmctldPidFile=$d/log/slurmctld.pid"
        echo "SlurmdPidFile=$d/log/slurmd.%n.pid"
        echo "SlurmctldLogFile=$d/log/slurmctld.log"
        echo "SlurmdLogFile=$d/log/slurmd.%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "SchedulerType=sched/backfill"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_CPU"
        echo "MpiDefault=none"
        echo "ReturnToService=2"
        echo "KillWait=5"
        echo "MinJobAge=300"
        for h in "${HOSTS[@]}"; do
            i=$((i + 1))
            echo "NodeName=$h NodeAddr=$NET.$i CPUs=2 RealMemory=1000 State=UNKNOWN"
        done
        echo "PartitionName=main Nodes=$(IFS=,; echo "${HOSTS[*]}") Default=YES MaxTime=INFINITE State=UP"
    } >"$SLURM_CONF_FILE"
    # Slurm 22.05's slurmd initialises a cgroup plugin whatever the task and proctrack plugins:
    # v1 named outright skips the autodetection that fails where no cgroup fs is mounted (the
    # hosts' /sys has none); nothing is made in any cgroup.
    echo "CgroupPlugin=cgroup/v1" >"$SLURM_STATE/etc/cgroup.conf"
    echo "PMIxCollFence=ring" >"$SLURM_STATE/etc/mpi.conf"
}

# `slurm CMD...`: a Slurm client command on h1, with the cluster's configuration. Every host's
# CPUs are the same few real cores, which Open MPI cannot know: its ranks yield while they wait
# (mpi_yield_when_idle) instead of spinning, as under `tests/hosts.sh mpirun`, and an `mpirun`
# in an allocation binds them to no core (left to itself it pins the two ranks of every host to
# the same two cores: a hello of 6 ranks took 6 to 58 s on a loaded machine, 2 s unbound). srun
# and mpirun pass both on to the ranks.
slurm_run() {
    [ -f "$SLURM_CONF_FILE" ] || { echo "no Slurm on the hosts (run: $SELF up --slurm)" >&2; return 1; }
    run_on h1 "SLURM_CONF=$SLURM_CONF_FILE OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none $*"
}

slurm_up() {
    local h t0=$EPOCHREALTIME d=$SLURM_STATE
    slurm_need
    slurm_config
    for h in "${HOSTS[@]}"; do
        run_on "$h" "mountpoint -q /tmp || mount -t tmpfs -o mode=1777 iolab-$h-tmp /tmp
            mountpoint -q /dev/shm || mount -t tmpfs -o mode=1777 iolab-$h-shm /dev/shm
            mountpoint -q $d/run/munge || mount --bind $d/hosts.d/$h/munge $d/run/munge"
        start_daemon "$d/hosts.d/$h/munged.pid" "$d/log/munged.$h.log" munged "$h" \
            munged -F --key-file="$d/munge.key" --socket="$MUNGE_SOCKET" \
            --pid-file="$d/hosts.d/$h/munge/munged.pid" --seed-file="$d/hosts.d/$h/lib/munged.seed"
    done
    for h in "${HOSTS[@]}"; do
        wait_for $UP_SECS "munged on $h answering" "run_on $h 'munge -n --socket=$MUNGE_SOCKET | unmunge --socket=$MUNGE_SOCKET'"
    done
    start_daemon "$d/slurmctld.pid" "$d/log/slurmctld.out" slurmctld h1 slurmctld -D -i -f "$SLURM_CONF_FILE"
    for h in "${HOSTS[@]}"; do
        start_daemon "$d/hosts.d/$h/slurmd.pid" "$d/log/slurmd.$h.out" slurmd "$h" slurmd -D -f "$SLURM_CONF_FILE"
    done
    wait_for $UP_SECS "the Slurm nodes idle" \
        "[ \"\$(slurm_run sinfo -h -N -t idle -o %N | sort -u | wc -l)\" = ${#HOSTS[@]} ]"
    echo "slurm: cluster $SLURM_CLUSTER, slurmctld on h1, slurmd on ${HOSTS[*]} (2 CPUs each, partition main), munged on every host; SLURM_CONF=$SLURM_CONF_FILE"
    echo "slurm up in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
}

# Before the hosts go: the jobs cancelled, the daemons ended by their PIDs, then what the job
# steps left running (slurmstepd daemonises, so it is no daemon's child).
slurm_down() {
    local d=$SLURM_STATE h pw=() pid
    [ -d "$d" ] || return 0
    if pid_alive "$d/slurmctld.pid" slurmctld; then
        slurm_run scancel --quiet --full --user=root 2>/dev/null || true
    fi
    for h in "${HOSTS[@]}"; do
        pw+=("$d/hosts.d/$h/slurmd.pid:slurmd")
    done
    pw+=("$d/slurmctld.pid:slurmctld")
    stop_pids "${pw[@]}"
    for h in "${HOSTS[@]}"; do
        for pid in $(ip netns pids "iolab-$h" 2>/dev/null); do
            tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q '^slurmstepd' && kill -9 "$pid" 2>/dev/null
        done
        pw=("$d/hosts.d/$h/munged.pid:munged")
        stop_pids "${pw[@]}"
    done
    rm -rf "$d"
}
