"""Cost of one health check on a large pool: read every node's report, judge, plan.

N node reports (8 GPUs each, NIC and disk counters like a real agent's, 2 % of the nodes
with a device error, a few with a skewed clock) are written to a temporary directory; one
check reads them all (``read_reports``: JSON, validation, file times) and plans
(``plan``: verdicts, drains, resumes, alerts). The baseline, measured in the same run, is
reading the same files with a bare ``json.loads`` — the least any check must do.

    .venv/bin/python bench/health_check.py [--nodes 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from gres.device import DeviceHealth
from slurm_plugins.health.config import HealthConfig
from slurm_plugins.health.plan import HealthState, plan
from slurm_plugins.health.verdict import NodeView
from slurm_plugins.node.report import (
    Clock,
    DiskCounters,
    NetCounters,
    NodeReport,
    read_reports,
    write_report,
)


def build(directory: Path, nodes: int, rng: random.Random) -> list[NodeView]:
    views = []
    for i in range(nodes):
        name = f"gpu{i:05d}"
        bad = rng.random() < 0.02
        devices = tuple(
            DeviceHealth("gpu", g, ("xid 79",) if bad and g == 3 else ()) for g in range(8)
        )
        skew = 3.0 if rng.random() < 0.005 else rng.uniform(-0.01, 0.01)
        report = NodeReport(
            node=name,
            ts=time.time() + skew,  # stamped as it is written, as the agent does
            probed=("gpu",),
            devices=devices,
            expected={"gpu": 8},
            clock=Clock("chrony", True, rng.uniform(-0.001, 0.001)),
            net={
                nic: NetCounters(*(rng.randrange(1 << 40) for _ in range(8)))
                for nic in ("eth0", "ib0", "ib1", "lo")
            },
            disk={
                d: DiskCounters(*(rng.randrange(1 << 40) for _ in range(5)))
                for d in ("nvme0n1", "nvme1n1")
            },
        )
        write_report(directory, report)
        views.append(NodeView(name, "MIXED", frozenset(), "", 8))
    return views


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(7)  # noqa: S311 - synthetic data, not secrets
    config = HealthConfig(max_clock_skew_s=1.0, report_max_age_s=600)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        views = build(d, args.nodes, rng)
        base, full = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            for report in sorted(d.glob("*.health.json")):
                report.stat()
                json.loads(report.read_text())
            t1 = time.perf_counter()
            reports = read_reports(d)
            p = plan(views, reports, HealthState(), now=time.time(), config=config)
            t2 = time.perf_counter()
            base.append(t1 - t0)
            full.append(t2 - t1)
    b, f = statistics.median(base), statistics.median(full)
    print(f"{args.nodes} nodes, median of {args.runs} runs")
    print(f"  baseline (json.loads of every report): {b * 1000:8.1f} ms")
    print(f"  health check (read + judge + plan):    {f * 1000:8.1f} ms  ratio {f / b:.2f}x")
    print(f"  drains planned: {len(p.drains)}, alerts: {len(p.notifications)}")


if __name__ == "__main__":
    main()
