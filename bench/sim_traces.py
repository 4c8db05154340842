"""FGD protocol on every task list of the Alibaba trace: best-fit, FGD and AIPool.

For each ``openb_pod_list_*.csv`` next to the GPU node list: seeds 42-51, allocation at
100 % and 130 % arrived, and AIPool's ratio to best-fit measured in the same run.

    .venv/bin/python bench/sim_traces.py [--data DIR] [--jobs 2] [--plots docs/img]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim import report  # noqa: E402
from sim.cluster import RAW  # noqa: E402
from sim.placer import CardChoice  # noqa: E402
from sim.runner import DEFAULT_SEEDS, Job, Variant, run_matrix, summarise  # noqa: E402
from sim.trace import load_nodes, load_tasks  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "alibaba-gpu-v2023"
POLICIES = ("best-fit", "fgd", "aipool", "aipool-ideal")


def main() -> int:
    args = _args()
    nodes = load_nodes(args.data / "openb_node_list_gpu_node.csv")
    seeds = DEFAULT_SEEDS[: args.seeds]
    variant = Variant(RAW, CardChoice.POLICY)
    bars: dict[str, dict[str, float]] = {}
    beaten = True
    print("| trace | policy | 100 % arrived | 130 % arrived | sd (130 %) | vs best-fit |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    started = time.perf_counter()
    for csv in sorted(args.data.glob("openb_pod_list_*.csv")):
        trace = csv.stem.removeprefix("openb_pod_list_")
        tasks = load_tasks(csv)
        jobs = [Job(p, s, variant) for p in POLICIES for s in seeds]
        summary = summarise(run_matrix(nodes, tasks, jobs, workers=args.jobs))
        best = next(s for s in summary if s.policy == "best-fit")
        for s in summary:
            ratio = s.alloc_130 / best.alloc_130
            if s.policy.startswith("aipool") and ratio <= 1:
                beaten = False
            print(
                f"| {trace} | {s.policy} | {s.alloc_100:.2f} % | {s.alloc_130:.2f} % | "
                f"{s.sd_130:.2f} | {ratio:.4f} |"
            )
            bars.setdefault(trace, {})[s.policy] = s.alloc_130
    print(f"\nall traces in {time.perf_counter() - started:.1f} s wall")
    print(f"AIPool beats best-fit at 130 % on every trace: {'yes' if beaten else 'NO'}")
    if args.plots:
        args.plots.mkdir(parents=True, exist_ok=True)
        report.plot_bars(
            args.plots / "sim_traces.png", bars, "GPU allocation at 130 % arrived, seeds 42-51"
        )
    return 0 if beaten else 1


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="trace directory")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes")
    parser.add_argument("--seeds", type=int, default=10, help="how many of seeds 42-51")
    parser.add_argument("--plots", type=Path, help="write sim_traces.png here")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
