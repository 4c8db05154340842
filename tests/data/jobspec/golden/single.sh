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
export AIPOOL_JOB_NAME=finetune
export AIPOOL_TOPOLOGY=single
export AIPOOL_PORT_BASE=$(( 20000 + (${SLURM_JOB_ID:-0} % 150) * 64 ))
AIPOOL_MAX_RESTARTS=2
if [ "${SLURM_RESTART_COUNT:-0}" -gt "$AIPOOL_MAX_RESTARTS" ]; then
  echo "aipool: restarted ${SLURM_RESTART_COUNT} times, more than max_restarts ($AIPOOL_MAX_RESTARTS)" >&2
  exit 1
fi
export AIPOOL_OUTPUT_DIR=/scratch/alice/runs

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
  # Leave with the program's status $1, requeueing a failed run while restarts are left.
  if [ "$1" -ne 0 ] && [ "${SLURM_RESTART_COUNT:-0}" -lt "$AIPOOL_MAX_RESTARTS" ]; then
    echo "aipool: exit status $1; requeueing (restart $(( ${SLURM_RESTART_COUNT:-0} + 1 )) of $AIPOOL_MAX_RESTARTS)" >&2
    scontrol requeue "$SLURM_JOB_ID"
  fi
  exit "$1"
}

aipool_run() {
  local rc=0
  "$@" || rc=$?
  aipool_finish "$rc"
}

# Environment from the spec
export HF_HOME=/scratch/alice/hf
export WANDB_MODE=offline

# Data and model mounts
export AIPOOL_DATA_SQUAD=/data/squad/v2
aipool_check_mount AIPOOL_DATA_SQUAD /data/squad/v2 ro
export AIPOOL_MODEL_BERT_BASE=/models/bert-base
aipool_check_mount AIPOOL_MODEL_BERT_BASE /models/bert-base ro
export AIPOOL_DATA_SCRATCH=/scratch/alice/tmp
aipool_check_mount AIPOOL_DATA_SCRATCH /scratch/alice/tmp rw

# Software environment (module and conda scripts read unset variables)
set +u
if ! type module >/dev/null 2>&1; then
  for aipool_init in /etc/profile.d/modules.sh /etc/profile.d/lmod.sh /usr/share/lmod/lmod/init/bash; do
    if [ -f "$aipool_init" ]; then
      . "$aipool_init"
      break
    fi
  done
fi
module load cuda/12.1 nccl/2.18
eval "$(conda shell.bash hook)"
conda activate torch-2.3
set -u

# The program
AIPOOL_PROGRAM=(python3 train.py --epochs 3 --note 'reads $AIPOOL_DATA_SQUAD itself')

aipool_run "${AIPOOL_PROGRAM[@]}"
