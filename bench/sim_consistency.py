"""Consistency of the simulator with the lab: a scaled-down slice of the trace, replayed on
the lab cluster through the policy daemon's placement steering, against ``predict``.

Prints the share of tasks on the predicted node and cards, the check of slurmctld's
in-node card choice against the simulator's model (``gres.placement.cards_slurm``) on the
slice's starts and on a probe that tells the candidate rules apart (``sim.labcheck.PROBE``),
and,
as the baseline measured on the same lab run, the agreement of a naive prediction: the
scorer picks every node (no Weight model for unpinned work) and the card is the tightest
fit (``cards_ideal``) rather than slurmctld's.

The slice: by default the committed one (``tests/data/sim/lab_slice.csv``, made from the
default trace with ``--start 4416 --count 16``); with ``--trace DIR`` it is cut afresh.

    aipool lab up   # (or a private lab: AIPOOL_LAB_DIR=… AIPOOL_LAB_PORT_OFFSET=…)
    .venv/bin/python bench/sim_consistency.py [--trace ../shared/data/alibaba-gpu-v2023]
        [--start 4416] [--count 16] [--write-slice tests/data/sim/lab_slice.csv] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aipool.lab.cluster import Lab
from gres.placement import SCORERS, Workload
from sim.cluster import SHARDS, Cluster
from sim.consistency import agreement, predict, scale_slice, typical_node, write_tasks
from sim.labcheck import lab_nodes, probe_cards, run_slice
from sim.placer import CardChoice, Placer
from sim.trace import NodeSpec, Task, load_nodes, load_tasks
from slurm_plugins.client import SlurmClient

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "sim" / "lab_slice.csv"


def naive(nodes: Sequence[NodeSpec], tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """The baseline model: the scorer places every task, against the whole slice's
    workload, and picks the card itself."""
    cluster = Cluster(nodes, SHARDS)
    requests = [SHARDS.snap(t.request) for t in tasks]
    workload = Workload.from_requests(requests)
    rng = random.Random(0)  # noqa: S311 - aipool does not draw from it
    placer = Placer(cluster, SCORERS["aipool"], workload, rng, CardChoice.POLICY)
    out: list[dict[str, Any]] = []
    for task, request in zip(tasks, requests, strict=True):
        choice = placer.choose(request)
        if choice is None:
            out.append({"name": task.name, "node": None, "cards": []})
            continue
        cluster.allocate(choice[0], request, choice[1])
        out.append({"name": task.name, "node": cluster.names[choice[0]], "cards": list(choice[1])})
    return out


def the_slice(args: argparse.Namespace, lab: NodeSpec) -> list[Task]:
    if args.trace is None:
        return load_tasks(SLICE)
    trace = Path(args.trace)
    reference = typical_node(load_nodes(trace / "openb_node_list_gpu_node.csv"))
    tasks = load_tasks(trace / "openb_pod_list_default.csv")
    return scale_slice(tasks, lab, reference, count=args.count, start=args.start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="the trace's folder: cut the slice afresh")
    ap.add_argument("--start", type=int, default=4416)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--write-slice", type=Path, help="also write the slice (CSV) here")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    lab = Lab()
    if not lab.is_up():
        raise SystemExit(f"the lab at {lab.cfg.root} is not up: run `aipool lab up` first")
    client = SlurmClient(env=lab.cfg.env(), timeout=30)
    nodes = lab_nodes(client)
    tasks = the_slice(args, nodes[0])
    if args.write_slice:
        write_tasks(tasks, args.write_slice)
    predicted = predict(nodes, tasks)
    with tempfile.TemporaryDirectory(prefix="sim-consistency-", dir=lab.cfg.jobs) as tmp:
        run = run_slice(
            client,
            tasks,
            slurm_conf=lab.cfg.env()["SLURM_CONF"],
            state_dir=Path(tmp) / "state",
            workdir=Path(tmp),
            prefix=f"sc{uuid.uuid4().hex[:6]}-",
        )
        probe = probe_cards(
            client, nodes[0], prefix=f"cp{uuid.uuid4().hex[:6]}-", workdir=Path(tmp)
        )
    live = agreement(predicted, run.placements)
    base = agreement(naive(nodes, tasks), run.placements)
    model_ok = sum(c["cards"] == c["model"] for c in run.card_choices)
    result = {
        "tasks": len(tasks),
        "started": sum(p["node"] is not None for p in run.placements),
        "node_agreement": live["node_agreement"],
        "card_agreement": live["card_agreement"],
        "differences": live["differences"],
        "card_model_matches": model_ok,
        "card_choices": len(run.card_choices),
        "probe_matches": sum(p["cards"] == p["model"] for p in probe),
        "probe_tightest_matches": sum(p["cards"] == p["tightest"] for p in probe),
        "probe_steps": len(probe),
        "baseline_node_agreement": base["node_agreement"],
        "baseline_card_agreement": base["card_agreement"],
        "lab_seconds": round(run.seconds, 1),
        "observed": run.placements,
        "card_observations": run.card_choices,
        "probe": probe,
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"slice: {len(tasks)} tasks, {result['started']} started on the lab ({run.seconds:.0f} s)"
    )
    for p, o in zip(predicted, run.placements, strict=True):
        print(f"  {p['name']}: predicted {p['node']} {p['cards']}, lab {o['node']} {o['cards']}")
    print(
        f"card choice: slurmctld matched the model in {model_ok} of {len(run.card_choices)} "
        "starts of the slice"
    )
    for p in probe:
        print(
            f"  probe {p['request']}: free {p['free_before']} -> cards {p['cards']} "
            f"(model {p['model']}, tightest {p['tightest']}, least used {p['least_used']})"
        )
    print(
        f"probe: model {result['probe_matches']} of {len(probe)}, "
        f"tightest fit {result['probe_tightest_matches']} of {len(probe)}"
    )
    print(
        f"agreement: node {live['node_agreement']:.1%}, cards {live['card_agreement']:.1%} "
        f"(baseline model: node {base['node_agreement']:.1%}, "
        f"cards {base['card_agreement']:.1%})"
    )


if __name__ == "__main__":
    main()
