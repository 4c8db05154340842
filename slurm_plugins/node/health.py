"""The node side of health: probes of a node's devices and clock, and its counters.

The node agent (``aipool node agent``) takes a :class:`NodeReport` with
:class:`HealthReporter` every interval and writes it beside its utilisation samples. Device
probes: :class:`NvmlHealth` (GPUs: ECC, pending retirements and row remaps, XID events,
cards that cannot be opened), :class:`NpuSmiHealth` (the Health column of ``npu-smi info``)
and, in the lab, :class:`InventoryHealth` (the inventory's devices with the faults of
:mod:`slurm_plugins.node.faults`). The clock comes from ``chronyc tracking`` or
``timedatectl``; network and disk counters from psutil. Commands run as argv lists with
timeouts.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from gres.accel import SOURCE_NAMES, accel_health
from gres.device import DeviceHealth, xid_problem
from gres.errors import ProbeError
from gres.naming import ACCEL_KINDS
from gres.probe import gpu_health, npu_health
from slurm_plugins.node.clock import parse_chronyc_tracking, parse_timedatectl
from slurm_plugins.node.faults import FaultsError, apply_faults, load_faults
from slurm_plugins.node.report import (
    Clock,
    DiskCounters,
    FsUsage,
    NetCounters,
    NodeReport,
    rates,
    write_report,
)
from slurm_plugins.node.sources import AccelSmi, NpuSmi

log = logging.getLogger("aipool.node.health")

#: Block devices that are not disks: loop-mounted images, RAM disks, compressed swap.
PSEUDO_DISKS = ("loop", "ram", "zram")


class DeviceProbe(Protocol):
    #: Kinds of device this probe looks for ("gpu", "npu").
    kinds: tuple[str, ...]
    #: Devices the node should have per kind, where the probe knows (its inventory).
    expected: Mapping[str, int]

    def devices(self) -> tuple[DeviceHealth, ...]:
        """Every device with its errors; raises :class:`ProbeError` when the probe fails."""
        ...


class NvmlHealth:
    """GPU errors from NVML, plus XID events collected between reports (an XID is reported
    for ``xid_window_s`` after it was seen: long enough for the checker to notice)."""

    kinds: tuple[str, ...] = ("gpu",)
    expected: Mapping[str, int] = {}

    def __init__(
        self, nvml: Any = None, *, xid_window_s: float = 600, clock: Callable[[], float] = time.time
    ) -> None:
        if nvml is None:
            import pynvml

            nvml = pynvml
        self.nvml: Any = nvml
        self.window = xid_window_s
        self.clock = clock
        self.seen: dict[tuple[int, int], float] = {}  # (minor, xid) -> last seen
        self.events: Any = None
        try:
            nvml.nvmlInit()  # held for the agent's life: the event set lives inside it
            self.events = nvml.nvmlEventSetCreate()
            count = nvml.nvmlDeviceGetCount()
        except (nvml.NVMLError, OSError) as exc:  # no driver: the probe then finds no GPUs
            log.warning("XID events unavailable: %s", exc)
            return
        for i in range(count):  # a card without XID events does not cost the others theirs
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                nvml.nvmlDeviceRegisterEvents(
                    handle, nvml.nvmlEventTypeXidCriticalError, self.events
                )
            except nvml.NVMLError as exc:
                log.warning("XID events of GPU %d unavailable: %s", i, exc)

    def _collect_xids(self) -> None:
        n = self.nvml
        while self.events is not None:
            try:
                data = n.nvmlEventSetWait_v2(self.events, 0)
            except n.NVMLError:  # Timeout: nothing more waiting
                return
            try:
                minor = int(n.nvmlDeviceGetMinorNumber(data.device))
            except n.NVMLError:
                continue
            self.seen[(minor, int(data.eventData))] = self.clock()

    def devices(self) -> tuple[DeviceHealth, ...]:
        self._collect_xids()
        now = self.clock()
        self.seen = {k: t for k, t in self.seen.items() if t >= now - self.window}
        out = []
        for d in gpu_health(self.nvml):
            errors, warnings = list(d.errors), list(d.warnings)
            for minor, xid in sorted(self.seen):
                if minor == d.index:
                    text, fatal = xid_problem(xid)
                    (errors if fatal else warnings).append(text)
            out.append(replace(d, errors=tuple(errors), warnings=tuple(warnings)))
        return tuple(out)


class NpuSmiHealth:
    """Ascend chips' Health column from ``npu-smi info`` (the reading the agent's
    utilisation source took, when they share one :class:`NpuSmi`)."""

    kinds: tuple[str, ...] = ("npu",)
    expected: Mapping[str, int] = {}

    def __init__(self, npu_smi: NpuSmi | None = None) -> None:
        self.npu_smi = npu_smi or NpuSmi()

    def devices(self) -> tuple[DeviceHealth, ...]:
        text = self.npu_smi.text()
        return () if text is None else npu_health(text)


class AccelSmiHealth:
    """MLU, DCU or XPU cards' health from their tool (:func:`gres.accel.accel_health`), from
    the reading the agent's utilisation source took when they share one :class:`AccelSmi`."""

    expected: Mapping[str, int] = {}

    def __init__(self, smi: AccelSmi) -> None:
        self.smi = smi
        self.kinds: tuple[str, ...] = (smi.kind,)

    def devices(self) -> tuple[DeviceHealth, ...]:
        text = self.smi.text()
        return () if text is None else accel_health(self.smi.kind, text)


class InventoryHealth:
    """The lab: this node's devices from the inventory YAML, all healthy, with the faults
    of the fault-injection file (re-read every time) laid over them."""

    def __init__(self, inventory: Path, node: str, faults: Path | None = None) -> None:
        from gres.inventory import load_inventory

        spec = next((n for n in load_inventory(Path(inventory)).nodes if n.name == node), None)
        if spec is None:
            raise ValueError(f"node {node!r} is not in the inventory {inventory}")
        self.node = node
        self.faults = faults
        self.base = (
            tuple(DeviceHealth("gpu", g.index) for g in spec.gpus)
            + tuple(DeviceHealth("npu", n.index) for n in spec.npus)
            + tuple(DeviceHealth(a.kind, a.index) for a in spec.accels)
        )
        self.kinds: tuple[str, ...] = tuple(
            k for k in ("gpu", "npu", *ACCEL_KINDS) if any(d.kind == k for d in self.base)
        )
        self.expected: Mapping[str, int] = {
            k: sum(1 for d in self.base if d.kind == k) for k in self.kinds
        }

    def devices(self) -> tuple[DeviceHealth, ...]:
        if self.faults is None:
            return self.base
        try:
            f = load_faults(self.faults).for_node(self.node)
            if f.probe_errors:
                raise ProbeError("; ".join(f.probe_errors))
            return apply_faults(self.base, f, self.node)
        except FaultsError as exc:  # loud on purpose: a broken lab file must not test nothing
            raise ProbeError(f"faults file {self.faults}: {exc}") from exc

    def clock(self) -> Clock | None:
        """The clock the faults file claims, if any."""
        if self.faults is None:
            return None
        try:
            return load_faults(self.faults).for_node(self.node).clock
        except FaultsError:
            return None  # devices() reports it


Runner = Callable[[list[str]], "subprocess.CompletedProcess[str] | None"]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def probe_clock(run: Runner = _run) -> Clock:
    """chrony's view of the clock; else systemd's; else unknown."""
    done = run(["chronyc", "tracking"])
    if done is not None and done.returncode == 0:
        try:
            return parse_chronyc_tracking(done.stdout)
        except ValueError as exc:
            log.warning("%s", exc)
    done = run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"])
    if done is not None and done.returncode == 0:
        try:
            return parse_timedatectl(done.stdout)
        except ValueError as exc:
            log.warning("%s", exc)
    return Clock()


def counters() -> tuple[dict[str, NetCounters], dict[str, DiskCounters], dict[str, FsUsage]]:
    """Network, block device and file system counters (psutil)."""
    import psutil

    net = {
        nic: NetCounters(
            c.bytes_sent,
            c.bytes_recv,
            c.packets_sent,
            c.packets_recv,
            c.errin,
            c.errout,
            c.dropin,
            c.dropout,
        )
        for nic, c in (psutil.net_io_counters(pernic=True) or {}).items()
    }
    disk = {
        dev: DiskCounters(
            c.read_bytes,
            c.write_bytes,
            c.read_count,
            c.write_count,
            int(getattr(c, "busy_time", 0)),
        )
        for dev, c in (psutil.disk_io_counters(perdisk=True) or {}).items()
        if not dev.startswith(PSEUDO_DISKS)
    }
    fs = {}
    for part in psutil.disk_partitions(all=False):
        try:
            u = psutil.disk_usage(part.mountpoint)
        except OSError:
            continue
        fs[part.mountpoint] = FsUsage(u.total, u.used, u.free)
    return net, disk, fs


class HealthReporter:
    """One node's :class:`NodeReport`: devices, clock, counters; taken fresh each call."""

    def __init__(
        self,
        node: str,
        probe: DeviceProbe | None,
        *,
        clock_probe: Callable[[], Clock] = probe_clock,
        time_source: Callable[[], float] = time.time,
        with_counters: bool = True,
    ) -> None:
        self.node = node
        self.probe = probe
        self.clock_probe = clock_probe
        self.time = time_source
        self.with_counters = with_counters
        self.previous: NodeReport | None = None

    def report(self) -> NodeReport:
        devices: tuple[DeviceHealth, ...] = ()
        errors: list[str] = []
        if self.probe is not None:
            try:
                devices = self.probe.devices()
            except ProbeError as exc:
                errors.append(str(exc))
        injected = self.probe.clock() if isinstance(self.probe, InventoryHealth) else None
        clock = injected or self.clock_probe()
        net, disk, fs = counters() if self.with_counters else ({}, {}, {})
        report = NodeReport(
            node=self.node,
            ts=0.0,
            probed=self.probe.kinds if self.probe is not None else (),
            devices=devices,
            expected=dict(self.probe.expected) if self.probe is not None else {},
            probe_errors=tuple(errors),
            clock=clock,
            net=net,
            disk=disk,
            fs=fs,
        )
        # Stamped last, just before it is written: probing time must not read as skew.
        ts = self.time()
        if injected is not None and injected.offset_s is not None:
            ts += injected.offset_s  # the lab's stand-in for a clock that is off
        report = replace(report, ts=ts)
        if self.previous is not None:
            report = replace(report, rates=rates(self.previous, report))
        self.previous = report
        return report


def health_reporter(
    source_spec: str,
    node: str,
    *,
    inventory: Path | None = None,
    faults: Path | None = None,
    npu_smi: NpuSmi | None = None,
    accel_smi: AccelSmi | None = None,
) -> HealthReporter:
    """The node's health reporter; its devices are probed like its samples are: from the
    inventory and fault file (the lab) when given, NVML for ``nvml``, ``npu-smi`` for
    ``npu-smi``, the vendor's tool for ``cnmon``, ``hy-smi``, ``xpu-smi``; with
    ``file:DIR`` or ``lab:DIR`` and no inventory only the clock and counters."""
    if inventory is not None:
        return HealthReporter(node, InventoryHealth(inventory, node, faults))
    if source_spec == "nvml":
        return HealthReporter(node, NvmlHealth())
    if source_spec == "npu-smi":
        return HealthReporter(node, NpuSmiHealth(npu_smi))
    if source_spec in SOURCE_NAMES:
        smi = accel_smi or AccelSmi(SOURCE_NAMES[source_spec])
        return HealthReporter(node, AccelSmiHealth(smi))
    return HealthReporter(node, None)


def report_health(out_dir: Path, reporter: HealthReporter) -> Path:
    """Replace ``<out_dir>/<node>.health.json`` with a fresh report."""
    return write_report(out_dir, reporter.report())
