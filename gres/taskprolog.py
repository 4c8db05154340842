"""The bash TaskProlog that sets each runtime's visibility variable for jobs holding custom GRES.

Slurm 22.05 sets CUDA_VISIBLE_DEVICES for ``gpu`` but exports nothing for a custom GRES such
as ``npu``, ``mlu``, ``dcu`` or ``xpu``. slurmd does add every ``export NAME=value`` line a
TaskProlog prints to the task's environment, so the script asks slurmctld (``scontrol show job
-d``) which GRES indexes the job holds on this node and translates them through a per-node map
rendered from the inventory: ``ASCEND_RT_VISIBLE_DEVICES`` for ``npu``, and
:data:`gres.naming.ACCEL_VARIABLES` for the others.

Only the fixed script body lives here; :func:`gres.render.render_task_prolog` supplies the maps.
The script is written to be tested piece by piece: sourcing it defines the functions without
running anything, and ``AIPOOL_SCONTROL`` points it at a fake ``scontrol``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gres.naming import ACCEL_VARIABLES, GENERATED_HEADER, NODE_NAME_RE

#: GRES name → the variable its runtime reads, in the order the script prints them.
VARIABLES = {"npu": "ASCEND_RT_VISIBLE_DEVICES", **ACCEL_VARIABLES}

_HEAD = r"""#
# Slurm TaskProlog. slurmd adds every "export NAME=value" line printed here to the task's
# environment. Slurm exports nothing for the custom GRES npu, mlu, dcu and xpu, so this script
# asks slurmctld which of their GRES indexes the job holds on this node and prints
#     export ASCEND_RT_VISIBLE_DEVICES=<device numbers>     (npu)
#     export MLU_VISIBLE_DEVICES=… / HIP_VISIBLE_DEVICES=… / XPU_VISIBLE_DEVICES=…
# through the map below (physical NPU id for whole cards, vNPU id for vNPUs, the card number
# for the others). It prints nothing and exits 0 when the job holds none of them here.
# Printed values come only from the map; text from the job is matched against strict
# patterns and never executed. Device cgroups, not this
# script, are what keep a job off devices it was not given.
set -u

AIPOOL_SCONTROL="${AIPOOL_SCONTROL:-scontrol}"

# aipool_dev_map NODE NAME: device numbers of the node's GRES NAME, in GRES index order.
aipool_dev_map() {
    case "$1:$2" in
"""

_BODY = r"""        *) return 1 ;;
    esac
}

# aipool_npu_map NODE: device numbers of the node's npu GRES.
aipool_npu_map() {
    aipool_dev_map "$1" npu
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

# aipool_gres_indexes NODE NAME: read `scontrol show job -d` on stdin and print the indexes of
# GRES NAME (npu, mlu, dcu, xpu) the job holds on NODE, one per line. Only per-node detail lines
# ("     Nodes=npu[1-2] CPU_IDs=0-3 Mem=4000 GRES=npu:910b:2(IDX:0-1)") before the
# MinCPUsNode= line count. Prints nothing and fails on a malformed IDX list.
aipool_gres_indexes() {
    local node="$1" name="$2" line hostlist gres i
    [[ "$name" =~ ^[a-z]{1,8}$ ]] || return 1
    local detail='^[[:space:]]+Nodes=([][A-Za-z0-9_.,-]+)[[:space:]]+CPU_IDs=[^[:space:]]*'
    detail+='[[:space:]]+Mem=[0-9]+[[:space:]]+GRES=([^[:space:]]*)[[:space:]]*$'
    local item="(^|,)${name}"'(:[^:(),[:space:]]+)*\(IDX:([0-9,-]+)\)'
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

# aipool_npu_indexes NODE: the npu GRES indexes, as aipool_gres_indexes.
aipool_npu_indexes() {
    aipool_gres_indexes "$1" npu
}

# aipool_export NODE NAME VARIABLE TEXT: print "export VARIABLE=<device numbers>" for the
# GRES NAME the job (its `scontrol show job -d` TEXT) holds on NODE, or nothing.
aipool_export() {
    local node="$1" name="$2" variable="$3" text="$4" mapped idx devices=""
    local -a map=()
    local -A seen=()
    mapped="$(aipool_dev_map "$node" "$name")" || return 0
    read -r -a map <<< "$mapped"
    while IFS= read -r idx; do
        (( idx < ${#map[@]} )) || continue
        [[ -n "${seen[$idx]:-}" ]] && continue
        seen[$idx]=1
        devices="${devices:+$devices,}${map[idx]}"
    done < <(printf '%s\n' "$text" | aipool_gres_indexes "$node" "$name")
    [[ -n "$devices" ]] && printf 'export %s=%s\n' "$variable" "$devices"
    return 0
}

# aipool_main: print the export lines for this task, or nothing.
aipool_main() {
    local node="${SLURMD_NODENAME:-}" job="${SLURM_JOB_ID:-}" text
    [[ -n "$node" && "$job" =~ ^[0-9]+$ ]] || return 0
    aipool_dev_map "$node" any >/dev/null || return 0
    text="$("$AIPOOL_SCONTROL" show job -d "$job" 2>/dev/null)" || return 0
"""

_TAIL = r"""    return 0
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    aipool_main
    exit 0
fi
"""


def render_task_prolog_script(maps: Mapping[str, Mapping[str, Sequence[int]]]) -> str:
    """The script, with one ``case`` arm per node and GRES name,
    ``'node:name') echo "<device numbers>"``, and an ``'node:any'`` arm per node that has one.

    Node names, GRES names and numbers are checked again here because they are pasted into
    bash.
    """
    arms = []
    for node in sorted(maps):
        if not NODE_NAME_RE.match(node):
            raise ValueError(f"{node!r} is not a valid node name")
        for name in sorted(maps[node]):
            numbers = maps[node][name]
            if name not in VARIABLES:
                raise ValueError(f"{node}: {name!r} is not a GRES with a visibility variable")
            if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in numbers):
                raise ValueError(f"{node}: device numbers must be non-negative integers")
            arms.append(f"        '{node}:{name}') echo \"{' '.join(map(str, numbers))}\" ;;\n")
        if maps[node]:
            arms.append(f"        '{node}:any') ;;\n")
    exports = "".join(
        f'    aipool_export "$node" {name} {variable} "$text"\n'
        for name, variable in VARIABLES.items()
    )
    return "#!/bin/bash\n" + GENERATED_HEADER + _HEAD + "".join(arms) + _BODY + exports + _TAIL
