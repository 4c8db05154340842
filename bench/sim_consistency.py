"""The live path on the lab against ``--rules live``: a slice of the trace in every shape the
daemon places, with departures, run through the real admission hook, placement daemon and
slurmctld, task by task against the prediction of the daemon's own engine on a copy of the
lab (``sim.labslice.predict_live``, what ``aipool sim predict`` prints).

The slice (``tests/data/sim/lab_live_slice.csv`` unless ``--trace`` cuts one afresh): 210
tasks of the default trace from task 4000 as lab jobs — whole and several GPUs, shares of a
GPU (shards), NPUs and vNPUs, CPU work on GPU nodes — three a step, each living 2-5 steps.
Baseline, in the same run: the same slice under Slurm alone (no daemon: first node by
Weight), to show the agreement is the daemon's doing. Then slurmctld's card choice alone, on
a probe that tells the candidate rules apart (``sim.labcheck.PROBE``).

    flock /tmp/aipool-lab.lock .venv/bin/python bench/sim_consistency.py \\
        [--trace ../shared/data/alibaba-gpu-v2023 --start 4000 --count 210 --batch 3] \\
        [--write-slice FILE] [--record FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aipool.lab import placement  # noqa: E402
from aipool.lab.cluster import Lab  # noqa: E402
from sim import labcheck, labrun  # noqa: E402
from sim.consistency import agreement  # noqa: E402
from sim.labslice import load_slice, make_slice, predict_live, write_slice  # noqa: E402
from sim.trace import load_tasks  # noqa: E402
from slurm_plugins.client import SlurmClient  # noqa: E402

SLICE = REPO / "tests" / "data" / "sim" / "lab_live_slice.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, help="the trace's folder: cut the slice afresh")
    ap.add_argument("--start", type=int, default=4000)
    ap.add_argument("--count", type=int, default=210)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--write-slice", type=Path, help="also write the slice (CSV) here")
    ap.add_argument("--record", type=Path, help="write what the lab did (JSON) here")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    lab = Lab()
    if not lab.is_up():
        raise SystemExit(f"the lab at {lab.cfg.root} is not up: run `aipool lab up` first")
    if placement.services_daemon_running(lab):
        raise SystemExit("the lab services' policy daemon is running: `aipool lab services down`")
    client = SlurmClient(env=lab.cfg.env(), timeout=30)
    nodes = labrun.lab_nodes(client)
    if args.trace is not None:
        trace = load_tasks(args.trace / "openb_pod_list_default.csv")
        tasks = make_slice(trace, start=args.start, count=args.count, batch=args.batch)
    else:
        tasks = load_slice(SLICE)
    if args.write_slice:
        write_slice(tasks, args.write_slice)
    release = client.release_tuple()
    predicted = predict_live(nodes, tasks, release=release)
    alone = predict_live(nodes, tasks, daemon=False, release=release)
    with tempfile.TemporaryDirectory(prefix="sim-consistency-", dir=lab.cfg.jobs) as tmp:
        run = labrun.run_live_slice(
            client,
            tasks,
            slurm_conf=lab.cfg.env()["SLURM_CONF"],
            heartbeat=placement.heartbeat(lab),
            state_dir=Path(tmp) / "state",
            workdir=Path(tmp),
            prefix=f"sc{uuid.uuid4().hex[:6]}-",
        )
        gpus = labcheck.lab_nodes(client)
        probe = labcheck.probe_cards(
            client, gpus[0], prefix=f"cp{uuid.uuid4().hex[:6]}-", workdir=Path(tmp)
        )
    live = agreement(predicted, run.placements)
    base = agreement(alone, run.placements)
    kinds: dict[str, int] = {}
    for t in tasks:
        kind = t.gres.split(":")[0] or "cpu"
        kind = "multi" if kind == "gpu" and t.gres != "gpu:1" else kind
        kinds[kind] = kinds.get(kind, 0) + 1
    result: dict[str, Any] = {
        "tasks": len(tasks),
        "shapes": kinds,
        "started": sum(p["node"] is not None for p in run.placements),
        "node_agreement": live["node_agreement"],
        "card_agreement": live["card_agreement"],
        "differences": live["differences"],
        "slurm_alone_node_agreement": base["node_agreement"],
        "probe_matches": sum(p["cards"] == p["model"] for p in probe),
        "probe_steps": len(probe),
        "lab_seconds": round(run.seconds, 1),
        "daemon_cycles": run.cycles,
    }
    if args.record:
        doc = {
            "source": f"bench/sim_consistency.py on the lab, {len(tasks)} tasks",
            "placements": run.placements,
            "probe": probe,
        }
        args.record.write_text(json.dumps(doc, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"slice: {len(tasks)} tasks {kinds}, {result['started']} started, {run.seconds:.0f} s")
    print(
        f"live path vs --rules live: node {live['node_agreement']:.1%}, "
        f"cards {live['card_agreement']:.1%} ({len(live['differences'])} differ)"
    )
    print(f"baseline, Slurm alone (first node by Weight): node {base['node_agreement']:.1%}")
    for p in probe:
        print(
            f"  probe {p['request']}: free {p['free_before']} -> cards {p['cards']} "
            f"(model {p['model']}, tightest {p['tightest']}, least used {p['least_used']})"
        )
    print(f"probe: slurmctld's card matched the model in {result['probe_matches']} of {len(probe)}")


if __name__ == "__main__":
    main()
