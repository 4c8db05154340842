"""Does the live system place jobs where the simulator says it will?

For the lab check: :func:`predict` places a small slice of a trace, in submission order and
without departures, on the lab's nodes as the live system does (the scorer picks the node,
slurmctld the card, ties to the lowest node name), and :func:`agreement` compares that with
what the lab did. Observed placements are a JSON list of ``{"name", "node", "cards"}`` (card
indices from ``scontrol show job -d``'s ``GRES=...(IDX:...)``; ``cards`` may be omitted).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gres.placement import SCORERS, Workload
from sim.cluster import SHARDS, Cluster, Grid
from sim.placer import CardChoice, Placer
from sim.trace import NodeSpec, Task


def predict(
    nodes: Sequence[NodeSpec],
    tasks: Sequence[Task],
    *,
    scorer: str = "aipool",
    grid: Grid = SHARDS,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Where each task of the slice lands; ``node`` is None for one that fits nowhere."""
    chosen = list(tasks[:limit] if limit else tasks)
    cluster = Cluster(nodes, grid)
    workload = Workload.from_requests(grid.snap(t.request) for t in chosen)
    rng = random.Random(0)  # noqa: S311 - only random-fit draws from it
    placer = Placer(cluster, SCORERS[scorer], workload, rng, CardChoice.SLURM)
    out: list[dict[str, Any]] = []
    for task in chosen:
        request = grid.snap(task.request)
        choice = placer.choose(request)
        if choice is None:
            out.append({"name": task.name, "node": None, "cards": []})
            continue
        cluster.allocate(choice[0], request, choice[1])
        out.append({"name": task.name, "node": cluster.names[choice[0]], "cards": list(choice[1])})
    return out


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
