"""Does the live system place jobs where the simulator says it will? Shared pieces.

:func:`agreement` compares predicted placements (:func:`sim.labslice.predict_live`) with
what the lab did (:mod:`sim.labrun`); both are JSON lists of ``{"name", "node", "cards"}``
(card indices from ``scontrol show job -d``'s ``GRES=...(IDX:...)``; ``cards`` may be
omitted). :func:`scale_slice` and :func:`sbatch_resources` turn trace tasks into jobs for
the lab's GPU nodes.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from gres.placement import Request
from sim.cluster import SHARDS, Grid
from sim.trace import NodeSpec, Task

SLICE_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos")


def typical_node(nodes: Sequence[NodeSpec]) -> NodeSpec:
    """The commonest GPU node shape of a trace (the reference for scaling a slice)."""
    shapes = Counter((n.cpu_milli, n.mem_mib, n.gpu_count) for n in nodes if n.gpu_count)
    if not shapes:
        raise ValueError("no GPU nodes to scale against")
    (cpu, mem, gpus), _ = shapes.most_common(1)[0]
    return next(n for n in nodes if (n.cpu_milli, n.mem_mib, n.gpu_count) == (cpu, mem, gpus))


def scale_slice(
    tasks: Sequence[Task],
    lab: NodeSpec,
    reference: NodeSpec,
    *,
    count: int,
    start: int = 0,
) -> list[Task]:
    """The first ``count`` GPU tasks from ``start`` that fit a lab node's cards, with CPU and
    memory scaled by the lab's share per card over the reference node's (CPUs rounded up
    to whole ones, as Slurm allocates them); GPU model constraints are dropped (the lab has
    one model). Multi-card tasks keep their card count."""
    if not lab.gpu_count or not reference.gpu_count:
        raise ValueError("both the lab node and the reference node need GPUs")
    cpu_scale = (lab.cpu_milli / lab.gpu_count) / (reference.cpu_milli / reference.gpu_count)
    mem_scale = (lab.mem_mib / lab.gpu_count) / (reference.mem_mib / reference.gpu_count)
    out: list[Task] = []
    for task in tasks[start:]:
        if len(out) >= count:
            break
        r = task.request
        if not 1 <= r.gpu_count <= lab.gpu_count:
            continue
        cpus = max(1, math.ceil(r.cpu_milli * cpu_scale / 1000))
        mem = max(1, math.ceil(r.mem_mib * mem_scale))
        scaled = Request(cpus * 1000, mem, r.gpu_milli, r.gpu_count)
        out.append(Task(task.name, scaled, task.qos))
    return out


def write_tasks(tasks: Sequence[Task], path: Path) -> None:
    """A task list in the trace's CSV format (the columns a slice needs)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        write_rows(tasks, handle)


def write_rows(tasks: Sequence[Task], handle: TextIO) -> None:
    w = csv.writer(handle, lineterminator="\n")
    w.writerow(SLICE_COLUMNS)
    for t in tasks:
        r = t.request
        spec = "|".join(r.gpu_models)
        w.writerow([t.name, r.cpu_milli, r.mem_mib, r.gpu_count, r.gpu_milli, spec, t.qos])


def sbatch_resources(task: Task, grid: Grid = SHARDS) -> list[str]:
    """The sbatch options asking Slurm for what the simulator places (CPUs, memory, cards
    on the grid: shards for a share of a card, whole cards otherwise)."""
    r = grid.snap(task.request)
    opts = [f"--cpus-per-task={max(1, math.ceil(r.cpu_milli / 1000))}", f"--mem={r.mem_mib}M"]
    if r.is_fractional:
        opts.append(f"--gres=shard:{grid.to_units(r.gpu_milli)}")
    elif r.gpu_count:
        opts.append(f"--gres=gpu:{r.gpu_count}")
    return opts


def agreement(
    predicted: Sequence[Mapping[str, Any]], observed: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """Share of the jobs both list that landed on the predicted node (and cards)."""
    seen = {str(o["name"]): o for o in observed}
    nodes = cards = compared = carded = 0
    differ: list[dict[str, Any]] = []
    for p in predicted:
        o = seen.get(str(p["name"]))
        if o is None:
            continue
        compared += 1
        same_node = (p.get("node") or None) == (o.get("node") or None)
        nodes += same_node
        if same_node and "cards" in o:
            carded += 1
            cards += sorted(o["cards"]) == sorted(p.get("cards") or [])
        if not same_node:
            differ.append(
                {"name": p["name"], "predicted": p.get("node"), "observed": o.get("node")}
            )
    return {
        "compared": compared,
        "missing": len(predicted) - compared,
        "node_agreement": nodes / compared if compared else None,
        "card_agreement": cards / carded if carded else None,
        "differences": differ,
    }


def load_placements(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("placements", [])
    if not isinstance(data, list) or not all(isinstance(d, dict) and "name" in d for d in data):
        raise ValueError(f"{path}: expected a JSON list of {{name, node, cards}} objects")
    return data
