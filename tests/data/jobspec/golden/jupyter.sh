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
export AIPOOL_JOB_NAME=notebook
export AIPOOL_TOPOLOGY=single
export AIPOOL_PORT_BASE=$(( 20000 + (${SLURM_JOB_ID:-0} % 150) * 64 ))
export AIPOOL_OUTPUT_DIR=/home/alice/.aipool

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

# Software environment (module and conda scripts read unset variables)
set +u
eval "$(conda shell.bash hook)"
conda activate jupyter
set -u

# The program
AIPOOL_PROGRAM=()

# A Jupyter server on this node: a free port of the cluster's range for jobs' servers (the
# only ports the portal proxies to) and a fresh token chosen here, published in a connection
# file (mode 640) that the portal and `aipool job` read: the user and the output directory's
# group (the portal's service group in the directories it gives users), nobody else. Cancel
# or the time limit stops it; the connection file goes with it.
AIPOOL_JUPYTER_APP=lab
AIPOOL_HOST="$(aipool_node_addr "${SLURMD_NODENAME:-$(hostname)}")"
AIPOOL_JUPYTER_PORT="$(python3 - 50000 59999 <<'AIPOOL_PY'
import random, socket, sys
low, high = int(sys.argv[1]), int(sys.argv[2])
for port in random.sample(range(low, high + 1), min(256, high - low + 1)):
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            continue
    print(port)
    break
else:
    sys.exit(f"aipool: no free port for Jupyter in {low}-{high}")
AIPOOL_PY
)"
# served under /jupyter/JOBID/, the path the portal proxies it at (users need no route here)
AIPOOL_JUPYTER_BASE="/jupyter/${SLURM_JOB_ID}/"
JUPYTER_TOKEN="$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"
export JUPYTER_TOKEN
AIPOOL_CONNECTION="$AIPOOL_OUTPUT_DIR/jupyter-${SLURM_JOB_ID}.json"
trap 'rm -f "$AIPOOL_CONNECTION"' EXIT
(
  umask 027
  printf '{"job_id": %s, "app": "%s", "host": "%s", "port": %s, "token": "%s", "base_url": "%s", "url": "http://%s:%s%s?token=%s"}\n' \
    "$SLURM_JOB_ID" "$AIPOOL_JUPYTER_APP" "$AIPOOL_HOST" "$AIPOOL_JUPYTER_PORT" "$JUPYTER_TOKEN" \
    "$AIPOOL_JUPYTER_BASE" "$AIPOOL_HOST" "$AIPOOL_JUPYTER_PORT" "$AIPOOL_JUPYTER_BASE" \
    "$JUPYTER_TOKEN" > "$AIPOOL_CONNECTION.tmp"
  mv -f "$AIPOOL_CONNECTION.tmp" "$AIPOOL_CONNECTION"
)
echo "aipool: jupyter $AIPOOL_JUPYTER_APP on $AIPOOL_HOST:$AIPOOL_JUPYTER_PORT (connection file $AIPOOL_CONNECTION)"
AIPOOL_JUPYTER_ARGS=(--no-browser --ip="$AIPOOL_HOST" --port="$AIPOOL_JUPYTER_PORT" --ServerApp.port_retries=0
  --ServerApp.base_url="$AIPOOL_JUPYTER_BASE")
if [ "$(id -u)" -eq 0 ]; then
  AIPOOL_JUPYTER_ARGS+=(--allow-root)
fi
jupyter "$AIPOOL_JUPYTER_APP" "${AIPOOL_JUPYTER_ARGS[@]}" &
AIPOOL_JUPYTER_PID=$!
trap 'kill -TERM "$AIPOOL_JUPYTER_PID" 2>/dev/null || true' TERM INT
aipool_rc=0
wait "$AIPOOL_JUPYTER_PID" || aipool_rc=$?
wait "$AIPOOL_JUPYTER_PID" 2>/dev/null || true
aipool_finish "$aipool_rc"
