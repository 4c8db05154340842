"""Is a node fit for work? A pure verdict over what Slurm and the node's agent say.

Inputs are Slurm's view of the node (:class:`NodeView`: state, flags, configured GPUs) and
the agent's last report as the checker found it (:class:`Seen`). Findings that **drain**:
slurmd not responding, a device with errors, fewer devices than the node should have, a
probe that failed outright, a clock further off than ``max_clock_skew`` (and, with
``require_sync``, an unsynchronised clock). Findings that are only **told**: device
warnings, an unsynchronised clock within the skew, no recent report (the agent may be
down; the node itself may be fine, so it is never drained for that — but such a node does
not count as healthy either).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from slurm_plugins.health.config import HealthConfig
from slurm_plugins.node import NodeReport, Seen

#: Drain reasons the checker sets start with this, so it never resumes an admin's drain.
REASON_PREFIX = "health: "
#: Slurm keeps a node's reason on one line; quotes would end it early.
REASON_MAX = 240
_UNSAFE = re.compile(r"[\"'\x00-\x1f\x7f]")


class Problem(StrEnum):
    NOT_RESPONDING = "not_responding"
    DEVICE_ERROR = "device_error"
    DEVICE_MISSING = "device_missing"
    PROBE_FAILED = "probe_failed"
    CLOCK_SKEW = "clock_skew"
    CLOCK_UNSYNCED = "clock_unsynced"
    DEVICE_WARNING = "device_warning"
    NO_REPORT = "no_report"


DRAINING = frozenset(
    {
        Problem.NOT_RESPONDING,
        Problem.DEVICE_ERROR,
        Problem.DEVICE_MISSING,
        Problem.PROBE_FAILED,
        Problem.CLOCK_SKEW,
    }
)


@dataclass(frozen=True, slots=True)
class NodeView:
    """What Slurm says about a node."""

    name: str
    state: str = "IDLE"
    flags: frozenset[str] = frozenset()
    reason: str = ""
    #: Whole GPUs configured in Slurm (``Gres=gpu:…``).
    gpus: int = 0

    @property
    def drained(self) -> bool:
        return bool(self.flags & {"DRAIN", "DRAINED", "DRAINING"})

    @property
    def drained_by_health(self) -> bool:
        return self.drained and self.reason.startswith(REASON_PREFIX)


@dataclass(frozen=True, slots=True)
class Finding:
    problem: Problem
    detail: str
    drains: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    node: str
    findings: tuple[Finding, ...] = ()

    @property
    def failing(self) -> bool:
        """Unfit for work: drain it."""
        return any(f.drains for f in self.findings)

    @property
    def healthy(self) -> bool:
        """Fit, and known to be (a recent report, nothing that drains)."""
        return not self.failing and not any(f.problem is Problem.NO_REPORT for f in self.findings)

    @property
    def problems(self) -> frozenset[Problem]:
        return frozenset(f.problem for f in self.findings)

    def reason(self, *, draining_only: bool = True) -> str:
        """``health: gpu 1: xid 79; clock 3.2 s ahead`` (Slurm's node reason)."""
        parts = [f.detail for f in self.findings if f.drains or not draining_only]
        if not parts:
            return ""
        text = _UNSAFE.sub(" ", REASON_PREFIX + "; ".join(parts))
        return text if len(text) <= REASON_MAX else text[: REASON_MAX - 3] + "..."


def assess(
    node: NodeView,
    seen: Seen | None,
    *,
    now: float,
    config: HealthConfig,
    controller_offset_s: float | None = None,
) -> Verdict:
    """The verdict on one node at ``now`` (the checker's clock)."""
    out: list[Finding] = []
    if "NOT_RESPONDING" in node.flags:
        out.append(Finding(Problem.NOT_RESPONDING, "slurmd not responding", True))
    if seen is None:
        out.append(Finding(Problem.NO_REPORT, "no agent report", False))
    elif seen.report is None:
        out.append(Finding(Problem.NO_REPORT, seen.error or "unreadable agent report", False))
    elif now - seen.mtime > config.report_max_age_s:
        age = now - seen.mtime
        out.append(Finding(Problem.NO_REPORT, f"agent report {age:.0f} s old", False))
    else:
        out += _devices(node, seen.report)
        out += _clock(seen.report, seen.mtime, config, controller_offset_s)
    return Verdict(node.name, tuple(out))


def _devices(node: NodeView, report: NodeReport) -> list[Finding]:
    out = [Finding(Problem.PROBE_FAILED, f"probe failed: {e}", True) for e in report.probe_errors]
    for d in sorted(report.devices, key=lambda d: (d.kind, d.index)):
        if d.errors:
            text = f"{d.kind} {d.index}: {', '.join(d.errors)}"
            out.append(Finding(Problem.DEVICE_ERROR, text, True))
        if d.warnings:
            text = f"{d.kind} {d.index}: {', '.join(d.warnings)}"
            out.append(Finding(Problem.DEVICE_WARNING, text, False))
    for kind, want in sorted(_expected(node, report).items()):
        have = sum(1 for d in report.devices if d.kind == kind)
        if have < want:
            out.append(Finding(Problem.DEVICE_MISSING, f"{kind}: {have} of {want} visible", True))
    return out


def _expected(node: NodeView, report: NodeReport) -> Mapping[str, int]:
    """Devices the node should show: its inventory's count, and Slurm's GPUs where the
    agent probed GPUs (a card that vanished leaves Slurm still counting it)."""
    want = {k: v for k, v in report.expected.items() if k in report.probed}
    if "gpu" in report.probed and node.gpus:
        want["gpu"] = max(want.get("gpu", 0), node.gpus)
    return want


def _clock(
    report: NodeReport, mtime: float, config: HealthConfig, controller_offset_s: float | None
) -> list[Finding]:
    """Skew against the controller: the node's offset from NTP time less the controller's
    own, and the report's timestamp against the file system's stamp; the larger counts."""
    estimates: list[tuple[float, str]] = [(report.ts - mtime, "report time stamp")]
    if report.clock.offset_s is not None:
        off = report.clock.offset_s - (controller_offset_s or 0.0)
        estimates.append((off, report.clock.source))
    skew, how = max(estimates, key=lambda e: abs(e[0]))
    out = []
    if abs(skew) > config.max_clock_skew_s:
        side = "ahead of" if skew > 0 else "behind"
        text = f"clock {abs(skew):.2f} s {side} the controller ({how})"
        out.append(Finding(Problem.CLOCK_SKEW, text, True))
    if report.clock.synchronised is False:
        text = f"clock not synchronised ({report.clock.source})"
        out.append(Finding(Problem.CLOCK_UNSYNCED, text, config.require_sync))
    return out
