"""Bring-up timer: ``lab down`` (wipe) then ``lab up`` from nothing, several times.

Baseline: the part of each bring-up spent waiting for the Slurm daemons themselves
(slurmdbd, slurmctld and every slurmd idle); the ratio shows what AIPool adds on top
(rendering, users, MariaDB, tenants, slurmrestd).
"""

from __future__ import annotations

import argparse
import statistics

from aipool.lab.cluster import Lab


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--leave-up", action="store_true", help="leave the lab running at the end")
    args = ap.parse_args()
    lab = Lab()
    totals, daemon_times = [], []
    for i in range(args.runs):
        lab.down(wipe=True)
        report = lab.up()
        marks = dict(report.steps)
        order = [name for name, _ in report.steps]
        # time spent inside the slurm daemon steps (each mark is cumulative from t0)
        daemon = 0.0
        for name in ("slurmdbd", "slurmctld", next(n for n in order if n.startswith("slurmd x"))):
            prev = order[order.index(name) - 1]
            daemon += marks[name] - marks[prev]
        totals.append(report.elapsed)
        daemon_times.append(daemon)
        steps = "  ".join(f"{n}={t:.2f}s" for n, t in report.steps)
        print(f"run {i + 1}: total {report.elapsed:.2f} s  ({steps})")
    if not args.leave_up:
        lab.down(wipe=True)
    total, daemon = statistics.median(totals), statistics.median(daemon_times)
    print(f"median bring-up, nothing -> all nodes idle: {total:.2f} s (target < 15 s)")
    print(f"median Slurm daemon start (baseline):        {daemon:.2f} s")
    print(f"ratio bring-up / daemon start:               {total / daemon:.2f}x")


if __name__ == "__main__":
    main()
