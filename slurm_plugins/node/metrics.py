"""The node agent's per-card metrics: one standard set for GPUs and NPUs alike.

Computed at scrape time from the latest device samples the agent took through ``gres``'s
probes (NVML, ``npu-smi``): utilisation as a 0…1 ratio, memory in bytes, power in watts,
temperature in degrees Celsius. A figure a card does not report is left out, not zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from gres.probe import DeviceSample
from slurm_plugins.common.metrics import Latest, SnapshotCollector, name, registry_of

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CardView:
    """What the agent sampled last on one node."""

    cluster: str
    node: str
    devices: Sequence[DeviceSample]


def card_families(view: CardView | None) -> list[Metric]:
    """Per-card gauges of a view (labels: cluster, node, kind, card index)."""
    labels = ["cluster", "node", "kind", "card"]
    util = GaugeMetricFamily(
        name("card", "utilisation_ratio"),
        "Busy share (0-1) of the card: GPU busy time, NPU AICore.",
        labels=labels,
    )
    used = GaugeMetricFamily(
        name("card", "memory_used_bytes"), "Card memory in use.", labels=labels
    )
    total = GaugeMetricFamily(
        name("card", "memory_total_bytes"), "Card memory in all.", labels=labels
    )
    power = GaugeMetricFamily(name("card", "power_watts"), "Power drawn now.", labels=labels)
    temp = GaugeMetricFamily(
        name("card", "temperature_celsius"), "Temperature of the card.", labels=labels
    )
    if view is None:
        return []
    for d in view.devices:
        key = [view.cluster, view.node, d.kind, str(d.index)]
        if d.util_percent is not None:
            util.add_metric(key, min(1.0, max(0.0, d.util_percent / 100)))
        if d.memory_used_mib is not None:
            used.add_metric(key, d.memory_used_mib * MIB)
        if d.memory_total_mib is not None:
            total.add_metric(key, d.memory_total_mib * MIB)
        if d.power_w is not None:
            power.add_metric(key, d.power_w)
        if d.temperature_c is not None:
            temp.add_metric(key, d.temperature_c)
    return [util, used, total, power, temp]


class NodeMetrics:
    """The agent's registry over its latest samples; ``saw()`` after each sampling."""

    def __init__(self) -> None:
        self._view: Latest[CardView] = Latest()
        self.registry: CollectorRegistry = registry_of([SnapshotCollector(self._cards)])

    def _cards(self) -> Iterable[Metric]:
        return card_families(self._view.get())

    def saw(self, view: CardView) -> None:
        self._view.set(view)
