"""Time to render each ``/metrics`` (what one scrape costs the daemon) on 2,000 nodes.

- **policy daemon**: its registry after a cycle, with the pool read of N nodes (the
  recorded lab's sinfo/squeue, nodes and jobs copied under new names until there are N:
  GPUs with shards in use, NPUs, CPU-only nodes) — cards, slices and free whole cards per node,
  partition and pool, fragmentation, queues;
- **node agents**: N agents' registries (8 GPUs each with load, health and errors, the host's
  CPU, memory, 4 NICs, 2 disks, 2 file systems), each rendered once, as Prometheus scrapes N
  agents;
- **portal**: its registry after requests to ``--routes`` routes (GET and POST, 2xx and 4xx);
  it does not grow with the nodes.

The baseline, measured in the same run, renders a flat registry holding the same number of
samples (one pre-built gauge family with as many series): what the text format alone costs.

    .venv/bin/python bench/metrics_scrape.py [--nodes 2000] [--runs 5] [--routes 250]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from gres.device import DeviceHealth, DeviceSample
from plumbing.metrics import SnapshotCollector, registry_of
from portal.metrics import Access, PortalMetrics
from slurm_plugins.client import parse
from slurm_plugins.node.metrics import CardView, HostReading, NodeMetrics
from slurm_plugins.node.report import DiskCounters, FsUsage, NetCounters
from slurm_plugins.policy.metrics import PolicyMetrics
from slurm_plugins.policy.plan import Plan
from slurm_plugins.policy.poolmetrics import PoolView

RECORDED = Path(__file__).resolve().parents[1] / "tests" / "data" / "slurm" / "22.05"


@dataclass(frozen=True)
class Case:
    name: str
    registries: list[CollectorRegistry]


def pool_view(nodes: int) -> PoolView:
    """The recorded lab's nodes and jobs, copied under new names up to ``nodes`` nodes."""
    base_nodes = parse.nodes((RECORDED / "sinfo.json").read_text())
    base_jobs = parse.jobs((RECORDED / "squeue.json").read_text())
    out_nodes, out_jobs = [], []
    for i in range(nodes):
        n = base_nodes[i % len(base_nodes)]
        out_nodes.append(replace(n, name=f"{n.name}-{i:05d}"))
    for copy in range(max(1, nodes // len(base_nodes))):
        for j in base_jobs:
            at = f"{j.nodes}-{copy * len(base_nodes):05d}" if j.nodes else ""
            out_jobs.append(replace(j, job_id=j.job_id + 100_000 * copy, nodes=at))
    now = max(j.submit_time.timestamp() for j in base_jobs if j.submit_time) + 600
    return PoolView("bench", out_nodes, out_jobs, now)


def policy_registry(nodes: int) -> CollectorRegistry:
    metrics = PolicyMetrics("bench")
    metrics.saw(pool_view(nodes))
    metrics.cycled(Plan(now=0.0), None, (0.05, 0.01, 0.02))
    return metrics.registry


def agent_registry(node: str, rng: random.Random) -> CollectorRegistry:
    devices = tuple(
        DeviceSample("gpu", g, rng.uniform(0, 100), rng.randrange(81920), 81920, 300.0, 60.0)
        for g in range(8)
    )
    health = tuple(DeviceHealth("gpu", g, ecc_uncorrected=0) for g in range(8))
    host = HostReading(
        cpus=128,
        cpu_seconds={m: rng.uniform(0, 1e6) for m in ("user", "system", "idle", "iowait")},
        memory_total=1 << 40,
        memory_available=1 << 39,
        net={nic: NetCounters(*(rng.randrange(1 << 40) for _ in range(8))) for nic in NICS},
        disk={d: DiskCounters(*(rng.randrange(1 << 40) for _ in range(5))) for d in DISKS},
        fs={m: FsUsage(1 << 42, 1 << 41, 1 << 41) for m in ("/", "/scratch")},
    )
    metrics = NodeMetrics()
    metrics.saw(CardView("bench", node, devices, health, host))
    return metrics.registry


NICS = ("eth0", "ib0", "ib1", "ib2")
DISKS = ("nvme0n1", "nvme1n1")


def portal_registry(routes: int, rng: random.Random) -> CollectorRegistry:
    metrics = PortalMetrics(Access("token", ()))
    for r in range(routes):
        for method in ("GET", "POST"):
            for status in (200, 404):
                metrics.observe(f"resource{r}.View", method, status, rng.uniform(0.001, 2))
    return metrics.registry


def samples(registries: Iterable[CollectorRegistry]) -> int:
    return sum(len(f.samples) for reg in registries for f in reg.collect())


def flat(n: int) -> CollectorRegistry:
    """One gauge family of ``n`` series, built once: the exposition format's own cost."""
    family = GaugeMetricFamily("aipool_bench_flat", "Flat samples.", labels=["node", "i"])
    for i in range(n):
        family.add_metric([f"node{i // 50:05d}", str(i % 50)], float(i))
    built: list[Metric] = [family]
    return registry_of([SnapshotCollector(lambda: built)])


def median_time(render: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        render()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def render_all(registries: list[CollectorRegistry]) -> int:
    return sum(len(generate_latest(r)) for r in registries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--routes", type=int, default=250)
    args = ap.parse_args()
    rng = random.Random(11)  # noqa: S311 - synthetic data, not secrets
    cases = [
        Case("policy daemon (pool)", [policy_registry(args.nodes)]),
        Case(
            f"node agents (x{args.nodes})",
            [agent_registry(f"gpu{i:05d}", rng) for i in range(args.nodes)],
        ),
        Case(f"portal ({args.routes} routes)", [portal_registry(args.routes, rng)]),
    ]
    print(f"{args.nodes} nodes, median of {args.runs} runs")
    print(f"  {'/metrics':<26} {'samples':>8} {'bytes':>10} {'render':>10} {'flat':>9}  ratio")
    for case in cases:
        n = samples(case.registries)
        size = render_all(case.registries)
        t = median_time(partial(render_all, case.registries), args.runs)
        baseline = flat(n)
        b = median_time(partial(generate_latest, baseline), args.runs)
        print(
            f"  {case.name:<26} {n:>8} {size:>10} {t * 1000:>8.1f} ms {b * 1000:>6.1f} ms"
            f"  {t / b:.2f}x"
        )


if __name__ == "__main__":
    main()
