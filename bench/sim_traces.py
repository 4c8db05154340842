"""The headline: FGD against AIPool on the live path, on every task list of the Alibaba trace
and on mixes of our own, seeds 42-51, tasks arriving until GPU demand is 130 % of capacity.

Per trace, in one run: FGD as its paper measures it (raw fractions, its own card: what a
Kubernetes GPU-sharing scheduler gets); AIPool under ``--rules live`` (what the placement
daemon and slurmctld do: shares rounded up to k/32 of a card, whole CPUs, the daemon's task
model and index, slurmctld's cards), its wins over FGD seed by seed; AIPool ideal (raw
fractions, the whole trace's task model: the upper bound); and FGD on the live path's k/32
grid, to tell placement from rounding; and AIPool live on a k/100 grid (a site's
``shards_per_gpu: 100``), for the traces where shares of a card dominate. GPU allocation is
what the placed tasks asked for, so the k/32 rounding counts against the live path
(allocated shards are shown too).

The mixes (``sim.mixes.MIXES``) are drawn from the default trace: more shares of a card,
more several-card tasks, more CPU-only work.

    .venv/bin/python bench/sim_traces.py [--data DIR] [--jobs 2] [--seeds 10] [--plots docs/img]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim import report  # noqa: E402
from sim.cluster import RAW, SHARDS, Grid  # noqa: E402
from sim.mixes import MIXES, mix  # noqa: E402
from sim.placer import CardChoice  # noqa: E402
from sim.runner import DEFAULT_SEEDS, LIVE, Job, Variant, run_matrix  # noqa: E402
from sim.trace import Task, load_nodes, load_tasks  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "alibaba-gpu-v2023"
IDEAL = Variant(RAW, CardChoice.POLICY)
ROWS = (
    ("fgd", IDEAL, "FGD"),
    ("aipool", LIVE, "AIPool live"),
    ("aipool", IDEAL, "AIPool ideal"),
    ("fgd", Variant(SHARDS, CardChoice.POLICY), "FGD on k/32"),
    ("aipool", Variant(Grid(100), CardChoice.SLURM, "live"), "AIPool live, k/100"),
)


def task_lists(data: Path) -> dict[str, list[Task]]:
    out = {
        csv.stem.removeprefix("openb_pod_list_"): load_tasks(csv)
        for csv in sorted(data.glob("openb_pod_list_*.csv"))
    }
    for name, weights in MIXES.items():
        out[name] = mix(out["default"], weights, seed=1)
    return out


def measure(
    nodes: Any, tasks: list[Task], seeds: tuple[int, ...], jobs: int | None
) -> dict[str, Any]:
    work = [Job(p, s, v) for p, v, _ in ROWS for s in seeds]
    results = run_matrix(nodes, tasks, work, workers=jobs)
    per: dict[str, list[tuple[float, float, float]]] = {}
    for job, r in results:
        name = next(n for p, v, n in ROWS if (p, v) == (job.policy, job.variant))
        per.setdefault(name, []).append(
            (r.at(130, requested=True), r.at(100, requested=True), r.at(130))
        )
    out: dict[str, Any] = {}
    fgd = [x[0] for x in per["FGD"]]
    for name, xs in per.items():
        at130 = [x[0] for x in xs]
        out[name] = {
            "mean_130": round(statistics.fmean(at130), 2),
            "sd_130": round(statistics.pstdev(at130), 2),
            "mean_100": round(statistics.fmean(x[1] for x in xs), 2),
            "allocated_130": round(statistics.fmean(x[2] for x in xs), 2),
            "wins_over_fgd": sum(a > b for a, b in zip(at130, fgd, strict=True)),
        }
    return out


def main() -> int:
    args = _args()
    nodes = load_nodes(args.data / "openb_node_list_gpu_node.csv")
    seeds = DEFAULT_SEEDS[: args.seeds]
    started = time.perf_counter()
    table: dict[str, dict[str, Any]] = {}
    print(
        "| trace | FGD | AIPool live | wins | AIPool ideal (upper bound) | FGD on k/32 "
        "| AIPool live, shards allocated | AIPool live, k/100 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, tasks in task_lists(args.data).items():
        m = measure(nodes, tasks, seeds, args.jobs)
        table[name] = m
        names = ("FGD", "AIPool live", "AIPool ideal", "FGD on k/32", "AIPool live, k/100")
        f, live, ideal, grid, fine = (m[k] for k in names)
        print(
            f"| {name} | {f['mean_130']:.2f} ± {f['sd_130']:.2f} % "
            f"| {live['mean_130']:.2f} ± {live['sd_130']:.2f} % "
            f"| {live['wins_over_fgd']}/{len(seeds)} | {ideal['mean_130']:.2f} % "
            f"| {grid['mean_130']:.2f} % | {live['allocated_130']:.2f} % "
            f"| {fine['mean_130']:.2f} % ({fine['wins_over_fgd']}/{len(seeds)}) |",
            flush=True,
        )
    wall = time.perf_counter() - started
    ahead = [n for n, m in table.items() if m["AIPool live"]["mean_130"] > m["FGD"]["mean_130"]]
    print(f"\n{len(table)} task lists x {len(ROWS)} rows x {len(seeds)} seeds in {wall:.0f} s wall")
    print(f"AIPool live ahead of FGD on {len(ahead)} of {len(table)}: {', '.join(ahead)}")
    if args.plots:
        args.plots.mkdir(parents=True, exist_ok=True)
        bars = {
            name: {"FGD": m["FGD"]["mean_130"], "AIPool live": m["AIPool live"]["mean_130"],
                   "AIPool ideal": m["AIPool ideal"]["mean_130"]}
            for name, m in table.items()
        }  # fmt: skip
        report.plot_bars(
            args.plots / "sim_traces.png",
            bars,
            "GPU allocation at 130 % arrived (requested), seeds 42-51: live path vs FGD",
        )
    if args.json:
        report.write_json(
            args.json, {"seeds": list(seeds), "wall_seconds": round(wall), "traces": table}
        )
    return 0 if len(ahead) == len(table) else 1


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="trace directory")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes")
    parser.add_argument("--seeds", type=int, default=10, help="how many of seeds 42-51")
    parser.add_argument("--plots", type=Path, help="write sim_traces.png here")
    parser.add_argument("--json", type=Path, help="write the figures as JSON here")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
