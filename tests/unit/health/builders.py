"""Builders for health tests: a node as Slurm sees it and an agent report, in a line each."""

from __future__ import annotations

from gres.device import DeviceHealth
from slurm_plugins.health.config import HealthConfig
from slurm_plugins.health.verdict import REASON_PREFIX, NodeView
from slurm_plugins.node import Clock, NodeReport, Seen

NOW = 1_800_000_000.0
CONFIG = HealthConfig(max_clock_skew_s=1.0, report_max_age_s=120.0, recover_after=2)


def view(name: str = "gpu1", *, flags: str = "", gpus: int = 4, reason: str = "") -> NodeView:
    fs = frozenset(f for f in flags.split(",") if f)
    return NodeView(name, "IDLE", fs, reason, gpus)


def drained_by_us(name: str = "gpu1", why: str = "gpu 0: xid 79") -> NodeView:
    return view(name, flags="DRAIN", reason=REASON_PREFIX + why)


def gpus(n: int = 4, **faults: tuple[str, ...]) -> tuple[DeviceHealth, ...]:
    """``gpus(4, g1=("xid 79",))``: four GPUs, GPU 1 with an error."""
    return tuple(DeviceHealth("gpu", i, faults.get(f"g{i}", ())) for i in range(n))


def seen(
    name: str = "gpu1",
    *,
    devices: tuple[DeviceHealth, ...] | None = None,
    probed: tuple[str, ...] = ("gpu",),
    expected: dict[str, int] | None = None,
    clock: Clock | None = None,
    skew: float = 0.0,
    age: float = 5.0,
    probe_errors: tuple[str, ...] = (),
) -> Seen:
    """A report written ``age`` seconds ago (file system clock) by a node ``skew`` off."""
    written = NOW - age
    report = NodeReport(
        node=name,
        ts=written + skew,
        probed=probed,
        devices=gpus() if devices is None else devices,
        expected={"gpu": 4} if expected is None else expected,
        probe_errors=probe_errors,
        clock=clock or Clock("chrony", True, 0.0001),
    )
    return Seen(report, written)
