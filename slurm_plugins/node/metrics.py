"""The node agent's metrics: per card one standard set for GPUs and NPUs alike, and the node's
CPU, memory, network and disks.

Computed at scrape time from what the agent's last pass read: the cards' load through
``gres``'s probes (NVML, ``npu-smi``) as utilisation (0…1), memory in bytes, power in watts
and temperature in degrees Celsius; the cards' errors from the same pass's health probe
(ECC, XID events, retired pages and row remaps on GPUs, the Health column of ``npu-smi``
on NPUs); the node's own figures from psutil. A figure a card does not report is left out,
not zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from gres.device import DeviceHealth, DeviceSample
from plumbing.metrics import Latest, SnapshotCollector, name, registry_of
from slurm_plugins.node.report import DiskCounters, FsUsage, NetCounters

MIB = 1024 * 1024
#: interfaces left out: loopback, and the per-container ends that come and go with jobs
#: (they would make the ``device`` label unbounded)
SKIPPED_NICS = ("lo", "veth", "docker", "cni", "flannel", "cali")
#: CPU time modes kept (psutil's names; others are folded into none)
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True, slots=True)
class HostReading:
    """The node's own figures at one pass (psutil)."""

    cpus: int
    cpu_seconds: Mapping[str, float]  # by mode, since boot
    memory_total: int  # bytes
    memory_available: int  # bytes
    net: Mapping[str, NetCounters] = field(default_factory=dict)
    disk: Mapping[str, DiskCounters] = field(default_factory=dict)
    fs: Mapping[str, FsUsage] = field(default_factory=dict)


def read_host() -> HostReading:
    """This host now: CPU times, memory, and the counters the health report also uses."""
    import psutil

    from slurm_plugins.node.health import counters

    times = psutil.cpu_times()._asdict()
    memory = psutil.virtual_memory()
    net, disk, fs = counters()
    return HostReading(
        cpus=psutil.cpu_count() or 1,
        cpu_seconds={m: float(times[m]) for m in CPU_MODES if m in times},
        memory_total=int(memory.total),
        memory_available=int(memory.available),
        net=net,
        disk=disk,
        fs=fs,
    )


@dataclass(frozen=True, slots=True)
class CardView:
    """What the agent read last on one node: the cards' load, their health (none where
    the health report is off) and the node's own figures (None: not read)."""

    cluster: str
    node: str
    devices: Sequence[DeviceSample]
    health: Sequence[DeviceHealth] = ()
    host: HostReading | None = None


CARD_LABELS = ["cluster", "node", "kind", "card"]


def card_families(view: CardView | None) -> list[Metric]:
    """Per-card gauges of a view (labels: cluster, node, kind, card index)."""
    if view is None:
        return []
    util = GaugeMetricFamily(
        name("card", "utilisation_ratio"),
        "Busy share (0-1) of the card: GPU busy time, NPU AICore.",
        labels=CARD_LABELS,
    )
    used = GaugeMetricFamily(
        name("card", "memory_used_bytes"), "Card memory in use.", labels=CARD_LABELS
    )
    total = GaugeMetricFamily(
        name("card", "memory_total_bytes"), "Card memory in all.", labels=CARD_LABELS
    )
    power = GaugeMetricFamily(name("card", "power_watts"), "Power drawn now.", labels=CARD_LABELS)
    temp = GaugeMetricFamily(
        name("card", "temperature_celsius"), "Temperature of the card.", labels=CARD_LABELS
    )
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
    return [util, used, total, power, temp, *health_families(view)]


def health_families(view: CardView) -> list[Metric]:
    """Per-card errors, the same for GPUs and NPUs: how many problems make the card unfit
    now, how many are only worth telling, and the ECC count where the card keeps one."""
    errors = GaugeMetricFamily(
        name("card", "errors"),
        "Problems that make the card unfit now: uncorrected ECC, a fatal XID, pages or rows "
        "waiting for a reset, an npu-smi health other than OK or Warning, a card that "
        "cannot be opened.",
        labels=CARD_LABELS,
    )
    warnings = GaugeMetricFamily(
        name("card", "warnings"),
        "Problems worth telling that do not make the card unfit (a non-fatal XID, npu-smi "
        "Warning, a check that failed to read).",
        labels=CARD_LABELS,
    )
    ecc = GaugeMetricFamily(
        name("card", "ecc_uncorrected_errors"),
        "Uncorrected ECC errors since the driver loaded (cards that count them).",
        labels=CARD_LABELS,
    )
    for d in view.health:
        key = [view.cluster, view.node, d.kind, str(d.index)]
        errors.add_metric(key, len(d.errors))
        warnings.add_metric(key, len(d.warnings))
        if d.ecc_uncorrected is not None:
            ecc.add_metric(key, d.ecc_uncorrected)
    return [errors, warnings, ecc] if view.health else []


def _kept(nic: str) -> bool:
    return not nic.startswith(SKIPPED_NICS)


def _gauge(what: str, doc: str, *extra: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name("node", what), doc, labels=["cluster", "node", *extra])


def _counter(what: str, doc: str, *extra: str) -> CounterMetricFamily:
    return CounterMetricFamily(name("node", what), doc, labels=["cluster", "node", *extra])


def host_families(view: CardView | None) -> list[Metric]:
    """The node's CPU, memory, network, disk and file system figures."""
    if view is None or view.host is None:
        return []
    h, base = view.host, [view.cluster, view.node]
    cpus = _gauge("cpus", "Logical CPUs of the node.")
    cpus.add_metric(base, h.cpus)
    cpu = _counter("cpu_seconds", "CPU time by mode, all CPUs together.", "mode")
    for mode, seconds in sorted(h.cpu_seconds.items()):
        cpu.add_metric([*base, mode], seconds)
    mem_total = _gauge("memory_total_bytes", "Memory of the node.")
    mem_total.add_metric(base, h.memory_total)
    mem_avail = _gauge("memory_available_bytes", "Memory available to new work.")
    mem_avail.add_metric(base, h.memory_available)
    return [cpus, cpu, mem_total, mem_avail, *_net_families(base, h), *_disk_families(base, h)]


def _net_families(base: list[str], h: HostReading) -> list[Metric]:
    recv = _counter("network_received_bytes", "Bytes received by the interface.", "device")
    sent = _counter("network_sent_bytes", "Bytes sent by the interface.", "device")
    errs = _counter("network_errors", "Packets in error or dropped, both ways.", "device")
    for nic, c in sorted(h.net.items()):
        if _kept(nic):
            recv.add_metric([*base, nic], c.bytes_recv)
            sent.add_metric([*base, nic], c.bytes_sent)
            errs.add_metric([*base, nic], c.errin + c.errout + c.dropin + c.dropout)
    return [recv, sent, errs]


def _disk_families(base: list[str], h: HostReading) -> list[Metric]:
    read = _counter("disk_read_bytes", "Bytes read from the disk.", "device")
    written = _counter("disk_written_bytes", "Bytes written to the disk.", "device")
    busy = _counter("disk_busy_seconds", "Time the disk was busy.", "device")
    for dev, c in sorted(h.disk.items()):
        read.add_metric([*base, dev], c.read_bytes)
        written.add_metric([*base, dev], c.write_bytes)
        busy.add_metric([*base, dev], c.busy_ms / 1000)
    size = _gauge("filesystem_size_bytes", "Size of the file system.", "mount")
    free = _gauge("filesystem_free_bytes", "Free space of the file system.", "mount")
    for mount, u in sorted(h.fs.items()):
        size.add_metric([*base, mount], u.total)
        free.add_metric([*base, mount], u.free)
    return [read, written, busy, size, free]


class NodeMetrics:
    """The agent's registry over its latest pass; ``saw()`` after each pass."""

    def __init__(self) -> None:
        self._view: Latest[CardView] = Latest()
        self.registry: CollectorRegistry = registry_of([SnapshotCollector(self._families)])

    def _families(self) -> Iterable[Metric]:
        view = self._view.get()
        return [*card_families(view), *host_families(view)]

    def saw(self, view: CardView) -> None:
        self._view.set(view)
