#!/usr/bin/env bash
# A one-node SLURM on localhost for the slow tests and README's cluster example.
#   sudo tests/cluster/slurm.sh start   # installs Debian's slurm-wlm + munge if missing, starts the daemons
#   sudo tests/cluster/slurm.sh stop
# Runs as root (slurmd must, to start jobs as the submitting user). Accounting is off: no
# slurmdbd (it needs a MySQL server), so `sacct` refuses; src/train/executors.py does not need it
# (it reads submitit's result files and asks `squeue` whether a job is still alive).
set -euo pipefail
ETC=/etc/slurm
STATE=/var/lib/slurm-localhost
NODE=$(hostname -s)

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }  # daemon whose pid file names a live process

start() {
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
  fi
  [ -s /etc/munge/munge.key ] || { mungekey --create --force && chown munge:munge /etc/munge/munge.key; }
  mkdir -p /run/munge "$STATE"/ctld "$STATE"/d "$STATE"/log && chown munge:munge /run/munge
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || runuser -u munge -- munged
  cat > "$ETC"/slurm.conf <<CONF
ClusterName=localhost
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
JobRequeue=1
MinJobAge=3600
ReturnToService=2
NodeName=$NODE CPUs=$(nproc) RealMemory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 )) State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  alive "$STATE"/slurmctld.pid || slurmctld -i
  alive "$STATE"/slurmd.pid || slurmd
  for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then sinfo; exit 0; fi
    sleep 1
  done
  echo "slurm did not come up; see $STATE/log/" >&2
  exit 1
}

stop() {
  scontrol shutdown 2>/dev/null || true
  for _ in $(seq 30); do alive "$STATE"/slurmctld.pid || alive "$STATE"/slurmd.pid || break; sleep 1; done
  [ -f /run/munge/munged.pid ] && kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
