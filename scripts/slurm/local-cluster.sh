# A single-node Slurm cluster on this machine, for tests and measurements (source this file):
# munged, slurmctld and slurmd from Debian's packages (scripts/setup.sh), run as root, with every
# file (config, key, state, spool, logs, pid files, munge socket) under one directory and ports
# of their own, so nothing of a system Slurm or munge is touched. No cgroups:
# ProctrackType=proctrack/linuxproc, TaskPlugin=task/none.
#   mm_cluster_start DIR   start it (exports SLURM_CONF); returns non-zero, logs printed, if the
#                          node is not idle within 60 s
#   mm_cluster_stop        cancel its jobs and stop the three daemons by their pid files, waiting
#                          until each has exited
#   mm_cluster_wait JOBID  wait until the job has left the queue; prints its final state

mm_cluster_start() {
  MM_CLUSTER_DIR="$1"
  local d="$MM_CLUSTER_DIR" host cpus port
  host="$(hostname -s)"
  cpus="$(nproc)"
  mkdir -p "$d/state" "$d/spool" "$d/log" "$d/munge"
  chmod 700 "$d/munge"
  # Ports from the process id, so two clusters on one machine do not meet.
  port=$((20000 + ($$ % 2000) * 2))
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$d/munge/munge.key"
  munged --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/munged.seed" || return 1
  cat >"$d/slurm.conf" <<CONF
ClusterName=mmtest
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=1
MpiDefault=none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=mmtest Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$d/slurm.conf"
  slurmctld || { mm_cluster_logs; return 1; }
  slurmd || { mm_cluster_logs; return 1; }
  local i state
  for ((i = 0; i < 60; i++)); do
    state="$(sinfo -h -n "$host" -o %t 2>/dev/null || true)"
    [[ "$state" == idle ]] && return 0
    sleep 1
  done
  echo "local-cluster: node $host is '${state:-unknown}' after 60 s, not idle" >&2
  mm_cluster_logs
  return 1
}

mm_cluster_logs() {
  local f
  for f in "$MM_CLUSTER_DIR"/log/*.log; do
    [[ -f "$f" ]] && { echo "--- $f (last lines)" >&2; tail -n 20 "$f" >&2; }
  done
}

mm_cluster_wait() {
  local job="$1" state=""
  for ((i = 0; i < 1800; i++)); do
    state="$(scontrol -o show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')"
    case "$state" in
      PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.5 ;;
      *) break ;;
    esac
  done
  echo "$state"
}

mm_cluster_stop() {
  [[ -n "${MM_CLUSTER_DIR:-}" ]] || return 0
  local d="$MM_CLUSTER_DIR" pidfile pid i
  if [[ -f "$d/slurmctld.pid" ]]; then scancel --quiet --user root 2>/dev/null || true; fi
  for pidfile in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/munged.pid"; do
    [[ -f "$pidfile" ]] || continue
    pid="$(cat "$pidfile")"
    [[ -n "$pid" ]] || continue
    kill "$pid" 2>/dev/null || continue
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "local-cluster: pid $pid ($pidfile) did not stop; killing it" >&2
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  MM_CLUSTER_DIR=""
}
