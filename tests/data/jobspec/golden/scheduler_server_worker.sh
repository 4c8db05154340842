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
export AIPOOL_JOB_NAME=byteps
export AIPOOL_TOPOLOGY=scheduler_server_worker
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
AIPOOL_PROGRAM=(bpslaunch python3 train.py)

# A heterogeneous job: component i is role AIPOOL_ROLES[i]; Slurm started all of them at once.
AIPOOL_ROLES=(scheduler server worker)
AIPOOL_PRIMARY=(worker)
AIPOOL_PROGRAM_0=(bpslaunch)
AIPOOL_PROGRAM_1=(bpslaunch)
AIPOOL_PROGRAM_2=("${AIPOOL_PROGRAM[@]}")

# Every role's addresses (host:port, one per replica) for every other role.
aipool_offset=0
aipool_replicas=()
for aipool_group in "${!AIPOOL_ROLES[@]}"; do
  aipool_var="SLURM_JOB_NODELIST_HET_GROUP_${aipool_group}"
  mapfile -t aipool_nodes < <(scontrol show hostnames "${!aipool_var}")
  aipool_replicas[$aipool_group]="${#aipool_nodes[@]}"
  aipool_hosts=""
  for aipool_node in "${aipool_nodes[@]}"; do
    aipool_hosts+="${aipool_hosts:+,}$(aipool_node_addr "$aipool_node"):$(aipool_port "$aipool_offset")"
    aipool_offset=$(( aipool_offset + 1 ))
  done
  export "AIPOOL_HOSTS_${AIPOOL_ROLES[$aipool_group]^^}=$aipool_hosts"
done

read -r -d '' AIPOOL_LAUNCH <<'AIPOOL_EOF' || true
# Runs in each replica: $1 is the role, the rest is the program.
set -euo pipefail
AIPOOL_ROLE="$1"
shift
AIPOOL_ROLE_INDEX="$SLURM_PROCID"
aipool_var="AIPOOL_HOSTS_${AIPOOL_ROLE^^}"
IFS=, read -r -a aipool_mine <<< "${!aipool_var}"
AIPOOL_ROLE_REPLICAS="${#aipool_mine[@]}"
AIPOOL_ADDRESS="${aipool_mine[$AIPOOL_ROLE_INDEX]}"
AIPOOL_PORT="${AIPOOL_ADDRESS##*:}"
export AIPOOL_ROLE AIPOOL_ROLE_INDEX AIPOOL_ROLE_REPLICAS AIPOOL_ADDRESS AIPOOL_PORT
aipool_json_list() {
  local out="" item
  IFS=, read -r -a aipool_items <<< "$1"
  for item in "${aipool_items[@]}"; do
    out+="${out:+, }\"$item\""
  done
  printf '[%s]' "$out"
}
case "$AIPOOL_TOPOLOGY" in
  ps_worker)
    # TensorFlow's cluster description
    TF_CONFIG="{\"cluster\": {\"ps\": $(aipool_json_list "$AIPOOL_HOSTS_PS"), \"worker\": $(aipool_json_list "$AIPOOL_HOSTS_WORKER")}, \"task\": {\"type\": \"$AIPOOL_ROLE\", \"index\": $AIPOOL_ROLE_INDEX}}"
    export TF_CONFIG
    ;;
  master_worker)
    # PyTorch's: the master is rank 0, worker i is rank i + 1
    IFS=, read -r -a aipool_workers <<< "$AIPOOL_HOSTS_WORKER"
    MASTER_ADDR="${AIPOOL_HOSTS_MASTER%:*}"
    MASTER_PORT="${AIPOOL_HOSTS_MASTER##*:}"
    WORLD_SIZE=$(( 1 + ${#aipool_workers[@]} ))
    if [ "$AIPOOL_ROLE" = master ]; then RANK=0; else RANK=$(( AIPOOL_ROLE_INDEX + 1 )); fi
    export MASTER_ADDR MASTER_PORT WORLD_SIZE RANK
    ;;
  scheduler_server_worker)
    # ps-lite's (MXNet, BytePS)
    IFS=, read -r -a aipool_servers <<< "$AIPOOL_HOSTS_SERVER"
    IFS=, read -r -a aipool_workers <<< "$AIPOOL_HOSTS_WORKER"
    DMLC_ROLE="$AIPOOL_ROLE"
    DMLC_PS_ROOT_URI="${AIPOOL_HOSTS_SCHEDULER%:*}"
    DMLC_PS_ROOT_PORT="${AIPOOL_HOSTS_SCHEDULER##*:}"
    DMLC_NUM_SERVER="${#aipool_servers[@]}"
    DMLC_NUM_WORKER="${#aipool_workers[@]}"
    DMLC_NODE_HOST="${AIPOOL_ADDRESS%:*}"
    export DMLC_ROLE DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_SERVER DMLC_NUM_WORKER DMLC_NODE_HOST
    ;;
esac
exec "$@"
AIPOOL_EOF

# Start every role; the job ends when the primary roles have ended (the others are stopped
# then), or at once when any role fails.
declare -A aipool_role_of=() aipool_is_primary=()
for aipool_group in "${!AIPOOL_ROLES[@]}"; do
  aipool_role="${AIPOOL_ROLES[$aipool_group]}"
  aipool_var="AIPOOL_PROGRAM_${aipool_group}[@]"
  # One replica per node of the component, said here: only sbatch puts each component's task
  # count in the environment; a job submitted through slurmrestd has its node list alone.
  aipool_n="${aipool_replicas[$aipool_group]}"
  srun --het-group="$aipool_group" --nodes="$aipool_n" --ntasks="$aipool_n" --ntasks-per-node=1 \
    --kill-on-bad-exit=1 \
    bash -c "$AIPOOL_LAUNCH" aipool-role "$aipool_role" "${!aipool_var}" &
  aipool_role_of[$!]="$aipool_role"
  for aipool_p in "${AIPOOL_PRIMARY[@]}"; do
    if [ "$aipool_p" = "$aipool_role" ]; then aipool_is_primary[$!]=1; fi
  done
done
aipool_status=0
while [ "${#aipool_is_primary[@]}" -gt 0 ] && [ "$aipool_status" -eq 0 ]; do
  sleep 1
  for aipool_pid in "${!aipool_role_of[@]}"; do
    if kill -0 "$aipool_pid" 2>/dev/null; then
      continue
    fi
    aipool_rc=0
    wait "$aipool_pid" || aipool_rc=$?
    echo "aipool: role ${aipool_role_of[$aipool_pid]} ended with status $aipool_rc" >&2
    unset "aipool_role_of[$aipool_pid]" "aipool_is_primary[$aipool_pid]"
    if [ "$aipool_rc" -ne 0 ]; then
      aipool_status="$aipool_rc"
    fi
  done
done
for aipool_pid in "${!aipool_role_of[@]}"; do
  kill -TERM "$aipool_pid" 2>/dev/null || true
done
wait || true
aipool_finish "$aipool_status"
