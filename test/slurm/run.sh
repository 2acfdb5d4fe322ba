#!/usr/bin/env bash
# Integration test of the Slurm example (examples/slurm): on a one-node
# Slurm cluster started on localhost, submit examples/slurm/sweep.sbatch as
# a 4-task array with its dependent merge job (examples/slurm/submit.sh),
# wait for both, and check that the merged CSV is byte-identical to a
# single-process `servesim sweep` of the same grid.
#
#   test/slurm/run.sh                 # needs root and apt (Debian/Ubuntu)
#   SERVESIM=/path/to/servesim test/slurm/run.sh
#
# It installs Debian's slurm-wlm and munge when slurmctld is missing
# (apt-get update; apt-get install -y slurm-wlm munge), starts munged (unless
# one is already answering), slurmctld and slurmd with a private slurm.conf
# in a temporary directory (ports 16817/16818; /etc/slurm is not touched),
# and stops the daemons it started on exit.
#
# Exit status: 0 passed; 1 failed; 77 skipped (printed with the reason:
# not root, no apt-get, the packages cannot be installed, ...).
#
# Environment:
#   SERVESIM            servesim binary to use (default: built from this
#                       checkout with `go build ./cmd/servesim`)
#   SWEEP_ARGS          extra sweep flags (default "--limit 60" keeps the
#                       16-point grid fast)
#   KEEP_WORK=1         keep the temporary directory (logs, shards)
#   SLURM_TEST_TIMEOUT  seconds to wait for the jobs (default 600)
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
timeout=${SLURM_TEST_TIMEOUT:-600}
export SWEEP_ARGS=${SWEEP_ARGS:---limit 60}

skip() { echo "SKIP: slurm integration test: $*"; exit 77; }
fail() { echo "FAIL: slurm integration test: $*"; dump_logs; exit 1; }
log() { echo "slurm-test: $*"; }

work=""
started_pids=()
munged_pid=""
dump_logs() {
  [ -n "$work" ] || return 0
  for f in "$work"/slurmctld.log "$work"/slurmd.log "$work"/job/*.out; do
    [ -f "$f" ] || continue
    echo "----- $f (last 30 lines)"
    tail -n 30 "$f"
  done
}
cleanup() {
  local pid
  for pid in "${started_pids[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${started_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  if [ -n "$munged_pid" ]; then
    kill "$munged_pid" 2>/dev/null
  fi
  if [ -n "$work" ]; then
    if [ "${KEEP_WORK:-}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- Packages ---------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  [ "$(id -u)" = 0 ] || skip "slurm-wlm/munge are not installed and installing them needs root (run as root, or install slurm-wlm and munge)"
  command -v apt-get >/dev/null || skip "slurm-wlm/munge are not installed and there is no apt-get to install them (install Slurm and munge yourself)"
  log "installing slurm-wlm and munge with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get update >/tmp/servesim-slurm-apt.log 2>&1; then
    skip "apt-get update failed (no network or repositories?); see /tmp/servesim-slurm-apt.log: $(tail -n 1 /tmp/servesim-slurm-apt.log)"
  fi
  if ! apt-get install -y slurm-wlm munge >>/tmp/servesim-slurm-apt.log 2>&1; then
    skip "apt-get install -y slurm-wlm munge failed; see /tmp/servesim-slurm-apt.log: $(tail -n 1 /tmp/servesim-slurm-apt.log)"
  fi
fi
[ "$(id -u)" = 0 ] || skip "starting slurmctld, slurmd and munged needs root"
log "$(slurmctld -V 2>/dev/null)"

work=$(mktemp -d /tmp/servesim-slurm.XXXXXX)
mkdir -p "$work/state" "$work/spool" "$work/job" "$work/bin"
chmod 755 "$work"

# --- servesim ---------------------------------------------------------------
if [ -n "${SERVESIM:-}" ]; then
  bin=$(cd "$(dirname "$SERVESIM")" && pwd)/$(basename "$SERVESIM")
else
  command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
  command -v go >/dev/null || fail "no go toolchain to build servesim (set SERVESIM)"
  log "building servesim"
  (cd "$repo" && go build -o "$work/bin/servesim" ./cmd/servesim) || fail "go build ./cmd/servesim failed"
  bin=$work/bin/servesim
fi
"$bin" sweep --help >/dev/null 2>&1 || fail "$bin has no sweep command (is it registered in cmd/servesim/root.go?)"

# --- munge ------------------------------------------------------------------
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "using the munged already running"
else
  if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile=/etc/munge/munge.key || fail "mungekey --create failed"
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null || fail "cannot write /etc/munge/munge.key"
    fi
  fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  if id munge >/dev/null 2>&1; then
    chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
    chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key; chmod 755 /run/munge
    runuser -u munge -- munged || fail "munged did not start"
  else
    munged --force || fail "munged did not start"
  fi
  for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  munged_pid=$(cat /run/munge/munged.pid 2>/dev/null)
  munge -n | unmunge >/dev/null || fail "munge does not work after starting munged"
  log "started munged (pid $munged_pid)"
fi

# --- Slurm ------------------------------------------------------------------
cpus=$(nproc)
[ "$cpus" -gt 2 ] && cpus=2
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=servesimtest
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -c -f "$SLURM_CONF" >>"$work/slurmctld.log" 2>&1 &
started_pids+=($!)
for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
scontrol ping 2>/dev/null | grep -q UP || fail "slurmctld did not come up"
slurmd -D -N localhost -f "$SLURM_CONF" >>"$work/slurmd.log" 2>&1 &
started_pids+=($!)
state=""
for _ in $(seq 150); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null | head -n 1)
  case $state in
    idle*) break ;;
    down*|drain*) scontrol update nodename=localhost state=resume 2>/dev/null ;;
  esac
  sleep 0.2
done
case $state in idle*) ;; *) fail "node localhost is '$state', not idle" ;; esac
log "one-node cluster up: slurmctld pid ${started_pids[0]}, slurmd pid ${started_pids[1]}, $cpus CPUs"

# --- The sweep --------------------------------------------------------------
cd "$work/job" || fail "cd $work/job"
export SCENARIO=$repo/examples/pd-2p2d.yaml
export GRID=$repo/examples/grid-pd.yaml
export OUTDIR=$work/job/shards
export RESULTS=$work/job/results.csv
export SERVESIM=$bin
ids=$("$repo/examples/slurm/submit.sh" 4 | tail -n 1) || fail "submit.sh failed"
read -r array merge <<<"$ids"
log "submitted array job $array and merge job $merge"

deadline=$((SECONDS + timeout))
while [ -n "$(squeue -h -j "$array,$merge" 2>/dev/null)" ]; do
  [ $SECONDS -lt $deadline ] || { squeue; fail "jobs still queued or running after ${timeout}s"; }
  sleep 1
done

for i in 0 1 2 3; do
  [ -s "$OUTDIR/shard-$i.csv" ] || fail "array task $i wrote no $OUTDIR/shard-$i.csv"
done
[ -s "$RESULTS" ] || fail "the merge job wrote no $RESULTS"

# shellcheck disable=SC2086 # SWEEP_ARGS is a list of flags
"$bin" sweep -q -c "$SCENARIO" --grid "$GRID" $SWEEP_ARGS -o "$work/single.csv" || fail "single-process sweep failed"
if ! cmp -s "$RESULTS" "$work/single.csv"; then
  diff "$RESULTS" "$work/single.csv" | head -n 20
  fail "merged Slurm output differs from the single-process sweep"
fi
rows=$(($(wc -l <"$RESULTS") - 1))
log "merged output of 4 array tasks = single-process sweep ($rows rows)"
echo "PASS: slurm integration test"
