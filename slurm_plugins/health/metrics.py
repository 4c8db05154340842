"""The health checker's metrics: its checks, the verdicts of the last one, and the nodes it
holds drained.

Verdicts are computed at scrape time from the last check's report (nodes by state, nodes
with each kind of finding, each node's verdict); what happened (checks, drains, resumes,
writes that failed) is counted. Served by ``aipool health run`` only where ``health.metrics``
gives an address.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from plumbing.metrics import Latest, SnapshotCollector, name, registry_of
from slurm_plugins.health.checker import CheckReport
from slurm_plugins.health.verdict import Problem, Verdict

CHECK_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def verdict_state(v: Verdict) -> str:
    """``failing`` (drains), ``healthy`` (a fresh report, nothing that drains) or
    ``unknown`` (no fresh report)."""
    return "failing" if v.failing else "healthy" if v.healthy else "unknown"


def verdict_families(cluster: str, report: CheckReport | None) -> list[Metric]:
    """Gauges over the last check: nodes by verdict, nodes per finding, drained nodes."""
    if report is None:
        return []
    nodes = GaugeMetricFamily(
        name("health", "nodes"),
        "Nodes by the verdict of the last check (healthy, failing, unknown).",
        labels=["cluster", "state"],
    )
    findings = GaugeMetricFamily(
        name("health", "findings"),
        "Nodes with each kind of finding in the last check (not_responding, device_error, "
        "device_missing, probe_failed, clock_skew, clock_unsynced, device_warning, no_report).",
        labels=["cluster", "check"],
    )
    failing = GaugeMetricFamily(
        name("health", "node_failing"),
        "1 where the last check found the node unfit for work.",
        labels=["cluster", "node"],
    )
    drained = GaugeMetricFamily(
        name("health", "node_drained"),
        "1 where the checker holds the node drained (an admin's drain is not counted).",
        labels=["cluster", "node"],
    )
    verdicts = report.plan.verdicts
    for state in ("healthy", "failing", "unknown"):
        nodes.add_metric([cluster, state], sum(1 for v in verdicts if verdict_state(v) == state))
    for problem in Problem:
        findings.add_metric([cluster, problem.value], sum(problem in v.problems for v in verdicts))
    held = report.drained
    for v in verdicts:
        failing.add_metric([cluster, v.node], 1.0 if v.failing else 0.0)
        drained.add_metric([cluster, v.node], 1.0 if v.node in held else 0.0)
    drained_total = GaugeMetricFamily(
        name("health", "drained_nodes"),
        "Nodes the checker holds drained now.",
        labels=["cluster"],
    )
    drained_total.add_metric([cluster], len(held))
    return [nodes, findings, failing, drained, drained_total]


class HealthMetrics:
    """The checker's registry; ``checked()`` after each check, ``failed()`` when Slurm
    could not be read."""

    def __init__(self, cluster: str = "default") -> None:
        self.cluster = cluster
        self._last: Latest[CheckReport] = Latest()
        self.registry: CollectorRegistry = registry_of([SnapshotCollector(self._verdicts)])
        reg = self.registry
        self.checks = Counter(
            name("health", "checks"), "Checks by outcome (ok, failed).", ["outcome"], registry=reg
        )
        self.check_seconds = Histogram(
            name("health", "check_seconds"),
            "Time of one check: read, plan and apply.",
            buckets=CHECK_BUCKETS,
            registry=reg,
        )
        self.drains = Counter(name("health", "drains"), "Nodes the checker drained.", registry=reg)
        self.resumes = Counter(
            name("health", "resumes"), "Nodes the checker returned to work.", registry=reg
        )
        self.failed_writes = Counter(
            name("health", "failed_writes"),
            "Drains and resumes Slurm refused (tried again next check).",
            registry=reg,
        )

    def _verdicts(self) -> Iterable[Metric]:
        return verdict_families(self.cluster, self._last.get())

    def checked(self, report: CheckReport, seconds: float) -> None:
        self._last.set(report)
        self.checks.labels("ok").inc()
        self.check_seconds.observe(seconds)
        failed = set(report.failed)
        self.drains.inc(sum(1 for d in report.plan.drains if d.node not in failed))
        self.resumes.inc(sum(1 for r in report.plan.resumes if r.node not in failed))
        self.failed_writes.inc(len(failed))

    def failed(self) -> None:
        self.checks.labels("failed").inc()
