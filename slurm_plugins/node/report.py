"""What a node agent reports about its node: accelerators, clock, network and disk counters.

The agent (``aipool node agent``) writes one report per node, replacing it atomically, as
``<dir>/<node>.health.json`` beside its utilisation samples (``<node>.jsonl``, which this
file format leaves alone). The health checker reads every report with the file's
modification time: the time the shared file system stamped, so a report's age does not
depend on the node's own clock, and ``ts - mtime`` shows how far that clock is off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from gres.device import DeviceHealth
from plumbing.store import write_atomic

REPORT_VERSION = 1
SUFFIX = ".health.json"


@dataclass(frozen=True, slots=True)
class Clock:
    """The node's time synchronisation as its time daemon sees it."""

    source: str = "none"  # chrony, timedatectl, fault (lab injection) or none
    synchronised: bool | None = None
    #: Node clock minus its time source, seconds (chrony's "System time"); None if unknown.
    offset_s: float | None = None


@dataclass(frozen=True, slots=True)
class NetCounters:
    """Cumulative counters of one network interface (psutil ``net_io_counters``)."""

    bytes_sent: int = 0
    bytes_recv: int = 0
    packets_sent: int = 0
    packets_recv: int = 0
    errin: int = 0
    errout: int = 0
    dropin: int = 0
    dropout: int = 0


@dataclass(frozen=True, slots=True)
class DiskCounters:
    """Cumulative counters of one block device (psutil ``disk_io_counters``)."""

    read_bytes: int = 0
    write_bytes: int = 0
    read_count: int = 0
    write_count: int = 0
    busy_ms: int = 0


@dataclass(frozen=True, slots=True)
class FsUsage:
    total: int = 0
    used: int = 0
    free: int = 0


@dataclass(frozen=True, slots=True)
class Rates:
    """Per second between two reports of one NIC (in: received, out: sent, errors: errors
    and drops) or one disk (in: read, out: written, busy: fraction of the time busy)."""

    in_bps: float = 0.0
    out_bps: float = 0.0
    errors_ps: float = 0.0
    busy: float = 0.0


@dataclass(frozen=True, slots=True)
class NodeReport:
    node: str
    #: The node's own clock when the report was taken (epoch seconds).
    ts: float
    #: Kinds of device the agent looked for ("gpu", "npu"): an empty list then means none.
    probed: tuple[str, ...] = ()
    devices: tuple[DeviceHealth, ...] = ()
    #: Devices the node should have per kind (from its inventory), where the agent knows.
    expected: Mapping[str, int] = field(default_factory=dict)
    #: Probes that failed outright (e.g. npu-smi exiting with an error or hanging).
    probe_errors: tuple[str, ...] = ()
    clock: Clock = field(default_factory=Clock)
    net: Mapping[str, NetCounters] = field(default_factory=dict)
    disk: Mapping[str, DiskCounters] = field(default_factory=dict)
    fs: Mapping[str, FsUsage] = field(default_factory=dict)
    #: ``net:<nic>`` and ``disk:<device>`` rates since the agent's previous report.
    rates: Mapping[str, Rates] = field(default_factory=dict)
    version: int = REPORT_VERSION

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, text: str | bytes) -> NodeReport:
        """Raises ``ValueError`` naming what is wrong and where (``at `$.devices[0].index```).
        Fields a newer agent adds are ignored."""
        try:
            report = _DECODER.decode(text)
        except msgspec.DecodeError as exc:  # ValidationError is one too
            raise ValueError(str(exc)) from None
        if report.version != REPORT_VERSION:
            raise ValueError(f"report version {report.version}, not {REPORT_VERSION}")
        return report


@dataclass(frozen=True, slots=True)
class Seen:
    """One node's report as the checker found it: the report (None if unreadable), when
    the file was last written by the file system's clock, and why it could not be read."""

    report: NodeReport | None
    mtime: float
    error: str = ""


def rates(prev: NodeReport, cur: NodeReport) -> dict[str, Rates]:
    """Rates between two reports of one node; a device whose counters went backwards
    (reset, wrapped, replaced) or that is new is left out until the next pair."""
    dt = cur.ts - prev.ts
    if dt <= 0:
        return {}
    out: dict[str, Rates] = {}
    for nic, c in cur.net.items():
        p = prev.net.get(nic)
        if p is None or c.bytes_recv < p.bytes_recv or c.bytes_sent < p.bytes_sent:
            continue
        bad = (
            c.errin + c.errout + c.dropin + c.dropout - (p.errin + p.errout + p.dropin + p.dropout)
        )
        out[f"net:{nic}"] = Rates(
            (c.bytes_recv - p.bytes_recv) / dt, (c.bytes_sent - p.bytes_sent) / dt, max(bad, 0) / dt
        )
    for dev, d in cur.disk.items():
        q = prev.disk.get(dev)
        if q is None or d.read_bytes < q.read_bytes or d.write_bytes < q.write_bytes:
            continue
        busy = min(max(d.busy_ms - q.busy_ms, 0) / 1000 / dt, 1.0)
        out[f"disk:{dev}"] = Rates(
            (d.read_bytes - q.read_bytes) / dt, (d.write_bytes - q.write_bytes) / dt, 0.0, busy
        )
    return out


def report_path(directory: Path, node: str) -> Path:
    return Path(directory) / f"{node}{SUFFIX}"


def write_report(directory: Path, report: NodeReport) -> Path:
    """Replace the node's report atomically: readers see the old or the new, never half."""
    path = report_path(directory, report.node)
    write_atomic(path, report.to_json().decode(), keep_previous=False)
    return path


def read_reports(directory: Path) -> dict[str, Seen]:
    """Every node's report in ``directory``, keyed by node name."""
    out: dict[str, Seen] = {}
    d = Path(directory)
    for f in sorted(d.glob(f"*{SUFFIX}")) if d.is_dir() else ():
        node = f.name[: -len(SUFFIX)]
        try:
            # The time of the content read: on NFS, open() fetches fresh attributes
            # (close-to-open), while a separate stat() may answer from a stale cache.
            with f.open("rb") as fh:
                text = fh.read()
                mtime = os.fstat(fh.fileno()).st_mtime
        except OSError:
            continue  # replaced or removed while we looked: the next check reads it
        try:
            report = NodeReport.from_json(text)
        except ValueError as exc:
            out[node] = Seen(None, mtime, f"unreadable report {f.name}: {exc}")
            continue
        if report.node != node:
            out[node] = Seen(None, mtime, f"{f.name} reports node {report.node!r}")
            continue
        out[node] = Seen(report, mtime)
    return out


#: msgspec decodes straight into the frozen dataclasses, checking every type on the way.
_DECODER = msgspec.json.Decoder(NodeReport)
