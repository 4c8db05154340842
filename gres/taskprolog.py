"""The bash TaskProlog that sets ASCEND_RT_VISIBLE_DEVICES for jobs holding NPUs.

Slurm 22.05 sets CUDA_VISIBLE_DEVICES for ``gpu`` but exports nothing for a custom GRES such
as ``npu``. slurmd does add every ``export NAME=value`` line a TaskProlog prints to the task's
environment, so the script asks slurmctld (``scontrol show job -d``) which npu GRES indexes the
job holds on this node and translates them through a per-node map rendered from the inventory.

Only the fixed script body lives here; :func:`gres.render.render_task_prolog` supplies the maps.
The script is written to be tested piece by piece: sourcing it defines the functions without
running anything, and ``AIPOOL_SCONTROL`` points it at a fake ``scontrol``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gres.naming import GENERATED_HEADER, NODE_NAME_RE

_HEAD = r"""#
# Slurm TaskProlog. slurmd adds every "export NAME=value" line printed here to the task's
# environment. Slurm exports nothing for the custom GRES npu, so this script asks slurmctld
# which npu GRES indexes the job holds on this node and prints
#     export ASCEND_RT_VISIBLE_DEVICES=<device numbers>
# through the map below (physical NPU id for whole cards, vNPU id for vNPUs). It prints nothing
# and exits 0 when the job holds no NPU here. Printed values come only from the map; text from
# the job is matched against strict patterns and never executed. Device cgroups, not this
# script, are what keep a job off devices it was not given.
set -u

AIPOOL_SCONTROL="${AIPOOL_SCONTROL:-scontrol}"

# aipool_npu_map NODE: device numbers of the node's npu GRES, in GRES index order.
aipool_npu_map() {
    case "$1" in
"""

_BODY = r"""        *) return 1 ;;
    esac
}

# aipool_expand_idx LIST: print each index of a Slurm IDX list such as "0-1,4", one per line.
aipool_expand_idx() {
    local list="$1" part lo hi i
    local -a parts=()
    [[ "$list" =~ ^[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*$ ]] || return 1
    IFS=, read -r -a parts <<< "$list"
    for part in "${parts[@]}"; do
        lo=$((10#${part%-*}))
        hi=$((10#${part#*-}))
        (( hi >= lo )) || return 1
        for (( i = lo; i <= hi; i++ )); do
            printf '%s\n' "$i"
        done
    done
}

# aipool_in_hostlist NODE HOSTLIST: is NODE one of the hosts of HOSTLIST ("npu[1-2],cpu1")?
aipool_in_hostlist() {
    local node="$1" hostlist="$2" name
    [[ "$hostlist" == "$node" ]] && return 0
    [[ "$hostlist" == *"["* || "$hostlist" == *","* ]] || return 1
    while IFS= read -r name; do
        [[ "$name" == "$node" ]] && return 0
    done < <("$AIPOOL_SCONTROL" show hostnames "$hostlist" 2>/dev/null)
    return 1
}

# aipool_npu_indexes NODE: read `scontrol show job -d` on stdin and print the npu GRES indexes
# the job holds on NODE, one per line. Only per-node detail lines
# ("     Nodes=npu[1-2] CPU_IDs=0-3 Mem=4000 GRES=npu:910b:2(IDX:0-1)") before the
# MinCPUsNode= line count. Prints nothing and fails on a malformed IDX list.
aipool_npu_indexes() {
    local node="$1" line hostlist gres i
    local detail='^[[:space:]]+Nodes=([][A-Za-z0-9_.,-]+)[[:space:]]+CPU_IDs=[^[:space:]]*'
    detail+='[[:space:]]+Mem=[0-9]+[[:space:]]+GRES=([^[:space:]]*)[[:space:]]*$'
    local item='(^|,)npu(:[^:(),[:space:]]+)*\(IDX:([0-9,-]+)\)'
    local -a found=() expanded=()
    while IFS= read -r line; do
        [[ "$line" =~ ^[[:space:]]*MinCPUsNode= ]] && break
        [[ "$line" =~ $detail ]] || continue
        hostlist="${BASH_REMATCH[1]}"
        gres="${BASH_REMATCH[2]}"
        aipool_in_hostlist "$node" "$hostlist" || continue
        while [[ "$gres" =~ $item ]]; do
            gres="${gres#*"${BASH_REMATCH[0]}"}"
            mapfile -t expanded < <(aipool_expand_idx "${BASH_REMATCH[3]}" || echo bad)
            for i in "${expanded[@]}"; do
                [[ "$i" == bad ]] && return 1
                found+=("$i")
            done
        done
        break
    done
    (( ${#found[@]} )) && printf '%s\n' "${found[@]}"
    return 0
}

# aipool_main: print the export line for this task, or nothing.
aipool_main() {
    local node="${SLURMD_NODENAME:-}" job="${SLURM_JOB_ID:-}" mapped text idx devices=""
    local -a map=()
    local -A seen=()
    [[ -n "$node" && "$job" =~ ^[0-9]+$ ]] || return 0
    mapped="$(aipool_npu_map "$node")" || return 0
    read -r -a map <<< "$mapped"
    text="$("$AIPOOL_SCONTROL" show job -d "$job" 2>/dev/null)" || return 0
    while IFS= read -r idx; do
        (( idx < ${#map[@]} )) || continue
        [[ -n "${seen[$idx]:-}" ]] && continue
        seen[$idx]=1
        devices="${devices:+$devices,}${map[idx]}"
    done < <(printf '%s\n' "$text" | aipool_npu_indexes "$node")
    [[ -n "$devices" ]] && printf 'export ASCEND_RT_VISIBLE_DEVICES=%s\n' "$devices"
    return 0
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    aipool_main
    exit 0
fi
"""


def render_task_prolog_script(maps: Mapping[str, Sequence[int]]) -> str:
    """The script, with one ``case`` arm per NPU node: ``node) echo "<device numbers>"``.

    Node names and numbers are checked again here because they are pasted into bash.
    """
    arms = []
    for node in sorted(maps):
        numbers = maps[node]
        if not NODE_NAME_RE.match(node):
            raise ValueError(f"{node!r} is not a valid node name")
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in numbers):
            raise ValueError(f"{node}: device numbers must be non-negative integers")
        arms.append(f"        '{node}') echo \"{' '.join(str(n) for n in numbers)}\" ;;\n")
    return "#!/bin/bash\n" + GENERATED_HEADER + _HEAD + "".join(arms) + _BODY
