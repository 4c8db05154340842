#!/bin/bash
set -euo pipefail
# Rendered by AIPool from a job spec. Values from the spec appear only as single-quoted
# shell words; never edit this file by hand, change the spec and render it again.
export SLURM_EXPORT_ENV=ALL
export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
if [ -z "${HOME:-}" ]; then
  HOME="$(getent passwd "$(id -u)" | cut -d: -f6)"
  export HOME
fi
export AIPOOL_JOB_NAME=ddp-2x4
export AIPOOL_TOPOLOGY=ddp
export AIPOOL_PORT_BASE=$(( 20000 + (${SLURM_JOB_ID:-0} % 150) * 64 ))
AIPOOL_MAX_RESTARTS=3
if [ "${SLURM_RESTART_COUNT:-0}" -gt "$AIPOOL_MAX_RESTARTS" ]; then
  echo "aipool: restarted ${SLURM_RESTART_COUNT} times, more than max_restarts ($AIPOOL_MAX_RESTARTS)" >&2
  exit 1
fi
export AIPOOL_OUTPUT_DIR="$PWD"

aipool_node_addr() {
  # The address Slurm reaches node $1 at (NodeAddr), falling back to its name.
  local addr
  addr="$(scontrol show node -o "$1" 2>/dev/null | sed -n 's/.* NodeAddr=\([^ ]*\) .*/\1/p')"
  printf '%s\n' "${addr:-$1}"
}

aipool_port() {
  echo $(( AIPOOL_PORT_BASE + $1 ))
}

aipool_check_mount() {
  # $1 variable, $2 path, $3 ro|rw: fail early with a clear message, not deep in the program.
  if [ ! -e "$2" ]; then
    echo "aipool: mount $1: $2 does not exist" >&2
    exit 66
  fi
  if [ ! -r "$2" ]; then
    echo "aipool: mount $1: $2 is not readable" >&2
    exit 77
  fi
  if [ "$3" = rw ] && [ ! -w "$2" ]; then
    echo "aipool: mount $1: $2 is not writable" >&2
    exit 77
  fi
}

aipool_finish() {
  # Leave with the program's status $1.
  exit "$1"
}

aipool_run() {
  local rc=0
  "$@" || rc=$?
  aipool_finish "$rc"
}

# The program
AIPOOL_SCRIPT='echo "rank $RANK of $WORLD_SIZE on $(hostname)"
exec python3 train.py --ddp
'
AIPOOL_PROGRAM=(bash -c "$AIPOOL_SCRIPT" "$AIPOOL_JOB_NAME")

# Data parallel over all nodes: one torchrun per node, rendezvous at the first node.
mapfile -t AIPOOL_NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
MASTER_ADDR="$(aipool_node_addr "${AIPOOL_NODES[0]}")"
MASTER_PORT="$(aipool_port 0)"
export MASTER_ADDR MASTER_PORT
export AIPOOL_NPROC_PER_NODE=4
read -r -d '' AIPOOL_LAUNCH <<'AIPOOL_EOF' || true
exec torchrun --nnodes="$SLURM_NNODES" --node-rank="$SLURM_NODEID" \
  --nproc-per-node="$AIPOOL_NPROC_PER_NODE" --master-addr="$MASTER_ADDR" \
  --master-port="$MASTER_PORT" --no-python "$@"
AIPOOL_EOF
aipool_run srun --nodes="$SLURM_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 \
  bash -c "$AIPOOL_LAUNCH" aipool-ddp "${AIPOOL_PROGRAM[@]}"
