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
export AIPOOL_JOB_NAME=ascend
export AIPOOL_TOPOLOGY=single
export AIPOOL_PORT_BASE=$(( 20000 + (${SLURM_JOB_ID:-0} % 150) * 64 ))
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
AIPOOL_PROGRAM=(python3 -m train --device npu)

aipool_run "${AIPOOL_PROGRAM[@]}"
