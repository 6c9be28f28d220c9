#!/usr/bin/env bash
# A real one-node Slurm cluster for automaton's `slurm` executor tests (and for trying it out),
# from Debian's slurm-wlm and munge, everything under one folder, no systemd.
#
#   .ci/slurm-one-node.sh start    install (once, as root) and start munged, slurmctld, slurmd
#   .ci/slurm-one-node.sh stop     stop the three daemons, by process id
#   .ci/slurm-one-node.sh status   say whether the cluster answers
#
# Idempotent: `start` on a running cluster only checks it. The folder is $AUTOMATON_SLURM_DIR
# (default /tmp/automaton-slurm); use the cluster with `export SLURM_CONF=<folder>/slurm.conf`.
# The node offers a consumable, device-less GRES `vram:<n>G` ($AUTOMATON_SLURM_VRAM_GB, default
# 141) so that jobs asking for `--gres=vram:<n>G` are packed by GPU memory.
# Test set-up only: SlurmUser=root, state under the folder (see docs in the README).
set -euo pipefail
DIR=${AUTOMATON_SLURM_DIR:-/tmp/automaton-slurm}
VRAM_GB=${AUTOMATON_SLURM_VRAM_GB:-141}
export SLURM_CONF=$DIR/slurm.conf

say() { printf 'slurm-one-node: %s\n' "$*" >&2; }

alive() { [ -s "$DIR/$1.mypid" ] && kill -0 "$(cat "$DIR/$1.mypid")" 2>/dev/null; }

answers() { alive slurmctld && alive slurmd && timeout 5 sinfo -h -o %T 2>/dev/null | grep -Eq 'idle|mix|alloc'; }

install() {
    if command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
        return
    fi
    if [ "$(id -u)" != 0 ]; then
        say "slurm-wlm and munge are not installed, and installing them needs root"
        exit 1
    fi
    local t0=$SECONDS
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
    say "installed slurm-wlm and munge in $((SECONDS - t0)) s"
}

configure() {
    mkdir -p "$DIR"/{state,spool,log}
    local host cpus mem
    host=$(hostname -s)
    cpus=$(nproc)
    [ "$cpus" -lt 4 ] && cpus=4   # agents mostly wait on a model: let a few share a core
    mem=$(awk '/MemTotal/ {print int($2/1024*0.8)}' /proc/meminfo)
    cat > "$DIR/slurm.conf" <<CONF
# one-node Slurm for automaton tests; written by .ci/slurm-one-node.sh
ClusterName=automaton
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
KillWait=5
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
GresTypes=vram
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=vram:${VRAM_GB}G State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    echo "NodeName=$host Name=vram Count=${VRAM_GB}G" > "$DIR/gres.conf"
}

start() {
    if answers; then
        say "already up (SLURM_CONF=$SLURM_CONF)"
        return
    fi
    install
    local t0=$SECONDS
    configure
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        chown munge:munge /etc/munge/munge.key 2>/dev/null || true
        chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
    if ! alive munged; then
        setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F \
            > "$DIR/munged.out" 2>&1 &
        echo $! > "$DIR/munged.mypid"
    fi
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
    alive slurmctld || { slurmctld -D -f "$SLURM_CONF" > "$DIR/slurmctld.out" 2>&1 & echo $! > "$DIR/slurmctld.mypid"; }
    alive slurmd || { slurmd -D -f "$SLURM_CONF" > "$DIR/slurmd.out" 2>&1 & echo $! > "$DIR/slurmd.mypid"; }
    for _ in $(seq 150); do answers && break; sleep 0.2; done
    if ! answers; then
        say "the cluster did not come up; see $DIR/log/ and $DIR/*.out"
        exit 1
    fi
    say "up in $((SECONDS - t0)) s; export SLURM_CONF=$SLURM_CONF"
}

stop() {
    for d in slurmd slurmctld munged; do
        if alive "$d"; then kill -TERM "$(cat "$DIR/$d.mypid")" 2>/dev/null || true; fi
    done
    for _ in $(seq 50); do
        alive slurmd || alive slurmctld || alive munged || break
        sleep 0.2
    done
    for d in slurmd slurmctld munged; do
        if alive "$d"; then kill -KILL "$(cat "$DIR/$d.mypid")" 2>/dev/null || true; fi
        rm -f "$DIR/$d.mypid"
    done
    say "stopped"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) if answers; then say "up (SLURM_CONF=$SLURM_CONF)"; else say "down"; exit 1; fi ;;
    *) say "usage: $0 start|stop|status"; exit 2 ;;
esac
