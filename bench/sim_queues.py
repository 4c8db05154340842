"""Queue policies in virtual time: a replay of the default trace and Kueue's baseline scenario.

Both run Slurm as modelled in ``sim.queue`` with the real policy daemon engine
(``slurm_plugins.policy.engine.plan``) under fifo, fair, priority and capacity:

* replay: the default trace on a tenth of the GPU nodes at 1.2x offered load, 4 tenants;
  GPU allocation while demand exceeds capacity, waits per QOS, Jain's index over tenants;
* Kueue's baseline: 30 cluster queues in 5 cohorts, 15,000 workloads; queue usage and mean
  time to admission per class, next to Kueue's own figures.

    .venv/bin/python bench/sim_queues.py [--data DIR] [--jobs 2] [--plots docs/img] [--json F]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim import report  # noqa: E402
from sim.cli import QUEUE_POLICIES  # noqa: E402
from sim.kueue import KUEUE_REPORTED, KUEUE_THRESHOLDS  # noqa: E402
from sim.parallel import kueue_one, run_parallel  # noqa: E402
from sim.replay import ReplaySetup, run_replay  # noqa: E402
from sim.trace import load_nodes, load_tasks  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "alibaba-gpu-v2023"


def main() -> int:
    args = _args()
    nodes = load_nodes(args.data / "openb_node_list_gpu_node.csv")
    tasks = load_tasks(args.data / "openb_pod_list_default.csv")
    setup = ReplaySetup(load=args.load)
    ok = True

    started = time.perf_counter()
    replays = run_parallel(
        run_replay, [(nodes, tasks, p, setup) for p in QUEUE_POLICIES], args.jobs
    )
    replay_wall = time.perf_counter() - started
    first = replays[0]
    print(
        f"Replay of the default trace: {first['nodes']} nodes ({first['gpus']} GPUs), "
        f"{first['tasks']} tasks, load {setup.load}, arrivals {first['compression']}x faster\n"
    )
    print(
        "| policy | allocation while demand > capacity | overload (h) | mean allocation | "
        "wait high / normal / low (mean s) | Jain (tenants) | requeued |"
    )
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    for r in replays:
        w = r["waits_by_qos"]
        waits = " / ".join(
            f"{w.get(q, {}).get('mean_s', float('nan')):.0f}" for q in ("high", "normal", "low")
        )
        print(
            f"| {r['policy']} | {r['alloc_overload']:.2f} % | {r['overload_hours']:.2f} | "
            f"{r['alloc_mean']:.2f} % | {waits} | {r['jain_tenants']:.3f} | {r['requeued']} |"
        )
        ok &= r["alloc_overload"] >= 80
    print(
        f"\nreplay: {len(replays)} runs in {replay_wall:.1f} s wall, "
        f"{sum(r['cpu_seconds'] for r in replays):.1f} s CPU"
    )

    started = time.perf_counter()
    kueues = run_parallel(kueue_one, [(p, 1.0, 1.0) for p in QUEUE_POLICIES], args.jobs)
    kueue_wall = time.perf_counter() - started
    k = KUEUE_REPORTED
    print("\nKueue baseline scenario (virtual time, daemon cycle 1 s)\n")
    print(
        "| policy | queue usage | large (s) | medium (s) | small (s) | evictions | makespan (s) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| kueue (reported) | {k['min_usage']} % | {k['large']} | {k['medium']} | "
        f"{k['small']} | - | - |"
    )
    for r in kueues:
        print(
            f"| {r['policy']} | {r['min_usage']:.1f} % | {r['large']:.1f} | {r['medium']:.1f} | "
            f"{r['small']:.1f} | {r['evictions']:.0f} | {r['makespan_s']:.1f} |"
        )
        ok &= r["min_usage"] >= 60 and all(r[c] < k[c] for c in ("large", "medium", "small"))
    print(
        f"\nkueue: {len(kueues)} runs in {kueue_wall:.1f} s wall, "
        f"{sum(r['cpu_seconds'] for r in kueues):.1f} s CPU"
    )
    print(
        f"targets (allocation >= 80 % while overloaded; usage >= 60 %, waits under Kueue's; "
        f"Kueue's own pass thresholds {KUEUE_THRESHOLDS}): {'met' if ok else 'NOT met'}"
    )

    if args.plots:
        args.plots.mkdir(parents=True, exist_ok=True)
        report.plot_replay(args.plots / "sim_replay.png", replays, "replay of the default trace")
        report.plot_kueue(args.plots / "sim_kueue.png", kueues, KUEUE_REPORTED)
    if args.json:
        report.write_json(args.json, {"setup": asdict(setup), "replay": replays, "kueue": kueues})
    return 0 if ok else 1


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="trace directory")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes")
    parser.add_argument("--load", type=float, default=1.2, help="offered load of the replay")
    parser.add_argument("--plots", type=Path, help="write sim_replay.png, sim_kueue.png here")
    parser.add_argument("--json", type=Path, help="write all results as JSON here")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
