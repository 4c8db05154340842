"""Share of multi-node jobs placed under one switch: AIPool's switch-aware placement against
Slurm's default-like first fit, on the same job streams in the same run.

A virtual cluster of leaf switches (8 switches of 8 nodes of 8 cards by default), nodes named
rack by rack; a seeded mix of gangs (2 to 8 nodes), single-node jobs and fractional work arriving at
90 % load (:mod:`sim.topology`). Rows: ``first-fit`` (the first nodes by name, Slurm without a
topology plugin), ``same-switch`` (:func:`gres.placement_topology.gang_same_switch` for gangs,
single-node work kept off idle switches) and the same with a 10-minute switch wait (what
``affinity: {same_switch: true, max_wait: 10m}`` asks of Slurm). The ratio is against
first fit, per seed, then averaged.

    .venv/bin/python bench/topology.py [--seeds 1-5] [--jobs 2000] [--load 0.9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.topology import SwitchCluster, TopoResult, simulate, synthetic_jobs

ROWS = (("first-fit", 0.0), ("same-switch", 0.0), ("same-switch", 600.0))


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-5")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--switches", type=int, default=8)
    parser.add_argument("--nodes-per-switch", type=int, default=8)
    args = parser.parse_args()
    cluster = SwitchCluster(args.switches, args.nodes_per_switch)
    results: dict[tuple[str, float], list[TopoResult]] = {row: [] for row in ROWS}
    started = time.perf_counter()
    for seed in _seeds(args.seeds):
        jobs = synthetic_jobs(seed, args.jobs, cluster, args.load)
        for strategy, wait in ROWS:
            results[(strategy, wait)].append(simulate(cluster, jobs, strategy, wait))
    base = results[ROWS[0]]
    print(
        f"{cluster.switches} switches x {cluster.nodes_per_switch} nodes x {cluster.cards} cards,"
        f" {args.jobs} jobs at load {args.load}, seeds {args.seeds}"
        f" ({time.perf_counter() - started:.1f} s)"
    )
    print(f"{'placement':<24}{'one switch':>11}{'ratio':>8}{'switches/gang':>15}{'mean wait':>11}")
    for (strategy, wait), runs in results.items():
        share = statistics.mean(r.share_one_switch for r in runs)
        ratio = statistics.mean(
            r.share_one_switch / b.share_one_switch for r, b in zip(runs, base, strict=True)
        )
        name = strategy + (f" +{wait / 60:g} min wait" if wait else "")
        spans = statistics.mean(r.switches_per_gang for r in runs)
        waited = statistics.mean(r.mean_wait_s for r in runs)
        print(f"{name:<24}{share:>10.1%}{ratio:>7.2f}x{spans:>15.2f}{waited:>10.0f}s")


if __name__ == "__main__":
    main()
