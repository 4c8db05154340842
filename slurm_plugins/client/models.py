"""Typed, frozen views of what Slurm reports, independent of the Slurm version.

Only :mod:`slurm_plugins.client.parse` builds these from Slurm's JSON; everything else in
AIPool reads these types.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    CONFIGURING = "CONFIGURING"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    REQUEUED = "REQUEUED"
    RESIZING = "RESIZING"
    REVOKED = "REVOKED"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def parse(cls, value: str) -> JobState:
        """One state map with an explicit unknown (``CANCELLED by 0`` → CANCELLED)."""
        word = value.strip().split(" ", 1)[0].upper() if value else ""
        try:
            return cls(word)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_active(self) -> bool:
        """Still queued or holding resources."""
        return self in _ACTIVE

    @property
    def is_finished(self) -> bool:
        return not self.is_active and self is not JobState.UNKNOWN

    @property
    def is_cancellable(self) -> bool:
        """Queued or running: neither ended nor ending (``COMPLETING``: cancelled or done,
        Slurm still cleaning up its nodes)."""
        return self.is_active and self is not JobState.COMPLETING


_ACTIVE = frozenset(
    {
        JobState.PENDING,
        JobState.RUNNING,
        JobState.SUSPENDED,
        JobState.COMPLETING,
        JobState.CONFIGURING,
        JobState.REQUEUED,
        JobState.RESIZING,
    }
)


class NodeState(StrEnum):
    IDLE = "IDLE"
    MIXED = "MIXED"
    ALLOCATED = "ALLOCATED"
    DOWN = "DOWN"
    ERROR = "ERROR"
    FUTURE = "FUTURE"
    UNKNOWN = "UNKNOWN"

    @classmethod
    def parse(cls, value: str) -> NodeState:
        word = value.strip().upper().rstrip("*~#!%$@^-+")
        try:
            return cls(word)
        except ValueError:
            return cls.UNKNOWN


_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


@dataclass(frozen=True, slots=True)
class Tres:
    """Trackable resources as ``name -> count`` (``mem`` in MiB), e.g. ``gres/gpu:a100``."""

    counts: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> Tres:
        """Parse ``cpu=2,mem=2000M,node=1,billing=2,gres/gpu:a100=1``."""
        counts: dict[str, int] = {}
        for item in (text or "").split(","):
            name, sep, raw = item.strip().partition("=")
            if not sep or not name:
                continue
            counts[name] = _count(raw, memory=name == "mem")
        return cls(counts)

    def __getitem__(self, name: str) -> int:
        return self.counts.get(name, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.counts)

    def __bool__(self) -> bool:
        return bool(self.counts)

    @property
    def gpus(self) -> int:
        return self["gres/gpu"]

    @property
    def shards(self) -> int:
        return self["gres/shard"]

    @property
    def npus(self) -> int:
        return self["gres/npu"]

    def typed(self, kind: str) -> dict[str, int]:
        """Per-type counts of one GRES kind: ``typed("gpu") -> {"a100": 2}``."""
        prefix = f"gres/{kind}:"
        return {k[len(prefix) :]: v for k, v in self.counts.items() if k.startswith(prefix)}

    def to_string(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.counts.items())


def _count(raw: str, *, memory: bool = False) -> int:
    raw = raw.strip()
    if memory and raw and raw[-1].upper() in _MEM_UNITS:
        return round(float(raw[:-1]) * _MEM_UNITS[raw[-1].upper()])
    try:
        return int(float(raw))
    except ValueError:
        return 0


@dataclass(frozen=True, slots=True)
class Gres:
    """One GRES entry of a node: ``gpu:a100:4(IDX:0-3)`` or a shard in use."""

    name: str
    type: str | None
    count: int
    indexes: str = ""

    @classmethod
    def parse_list(cls, text: str | None) -> tuple[Gres, ...]:
        """Parse ``gpu:a100:4,shard:a100:128`` or ``gpu:a100:1(IDX:0),shard:a100:16(0/32,…)``."""
        out = []
        for item in _split_top(text or ""):
            m = _GRES_RE.fullmatch(item.strip())
            if not m:
                continue
            parts = m["spec"].split(":")
            count = int(parts.pop()) if parts and parts[-1].isdigit() else 1
            name, typ = parts[0], (parts[1] if len(parts) > 1 and parts[1] != "(null)" else None)
            out.append(cls(name, typ, count, m["idx"] or ""))
        return tuple(out)


_GRES_RE = re.compile(r"(?P<spec>[^()]+?)(?:\((?:IDX:)?(?P<idx>[^)]*)\))?")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        items.append("".join(cur))
    return [i for i in items if i.strip()]


@dataclass(frozen=True, slots=True)
class Job:
    job_id: int
    name: str
    user: str
    account: str
    partition: str
    qos: str
    state: JobState
    reason: str = ""
    priority: int = 0
    site_factor: int | None = None
    nice: int = 0
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    time_limit_min: int | None = None
    nodes: str = ""
    node_count: int = 0
    cpus: int = 0
    gres_request: str = ""
    tres_req: Tres = field(default_factory=Tres)
    tres_alloc: Tres = field(default_factory=Tres)
    gres_detail: tuple[str, ...] = ()
    comment: str = ""
    admin_comment: str = ""
    array_job_id: int | None = None
    array_task_id: int | None = None
    het_job_id: int | None = None
    het_job_offset: int | None = None
    dependency: str = ""
    required_nodes: str = ""
    excluded_nodes: str = ""
    features: str = ""
    exit_code: int | None = None
    restart_count: int = 0
    cluster: str = ""
    work_dir: str = ""
    stdout_path: str = ""
    held: bool = False
    requeue: bool = True
    eligible_time: datetime | None = None

    @property
    def stdout_file(self) -> str:
        """The batch script's output file: ``stdout_path`` with Slurm's filename patterns
        filled in (squeue reports ``slurm-%j.out``; the file is ``slurm-42.out``), relative
        paths taken from the job's working directory; "" when Slurm reports none."""
        if not self.stdout_path:
            return ""
        path = expand_filename(self.stdout_path, self)
        if not path.startswith("/") and self.work_dir:
            path = f"{self.work_dir.rstrip('/')}/{path}"
        return path

    @property
    def is_pending(self) -> bool:
        return self.state is JobState.PENDING

    @property
    def is_running(self) -> bool:
        return self.state is JobState.RUNNING


_PATTERN = re.compile(r"%(\d*)([%AaJjNnstux])")


def expand_filename(pattern: str, job: Job) -> str:
    """Slurm's ``--output`` patterns (sbatch(1) "filename pattern") for the batch step:
    ``%j``/``%J`` job id, ``%A``/``%a`` array job and task, ``%u`` user, ``%x`` name, ``%N``
    first node, ``%n``/``%s``/``%t`` 0 for the batch step, ``%%``; a number pads with zeros."""
    first_node = re.split(r"[,\[]", job.nodes, maxsplit=1)[0] if job.nodes else ""

    def fill(m: re.Match[str]) -> str:
        width, code = m.group(1), m.group(2)
        if code == "%":
            return "%"
        value: object = {
            "j": job.job_id,
            "J": job.job_id,
            "A": job.array_job_id if job.array_job_id is not None else job.job_id,
            "a": job.array_task_id if job.array_task_id is not None else 4294967294,
            "u": job.user,
            "x": job.name,
            "N": first_node,
            "n": 0,
            "s": "batch",
            "t": 0,
        }[code]
        text = str(value)
        return text.zfill(int(width)) if width and text.isdigit() else text

    return _PATTERN.sub(fill, pattern)


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    state: NodeState
    flags: frozenset[str] = frozenset()
    cpus: int = 0
    alloc_cpus: int = 0
    real_memory: int = 0
    alloc_memory: int = 0
    gres: tuple[Gres, ...] = ()
    gres_used: tuple[Gres, ...] = ()
    features: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    weight: int = 1
    reason: str = ""
    address: str = ""
    port: int | None = None
    tres: Tres = field(default_factory=Tres)
    tres_used: Tres = field(default_factory=Tres)

    def has_state(self, state: str) -> bool:
        """``has_state("DRAIN")`` looks at both the base state and the flags."""
        s = state.upper()
        return self.state.value == s or s in self.flags

    @property
    def available(self) -> bool:
        """Up and accepting new work."""
        blocked = {"DRAIN", "DRAINED", "DRAINING", "NOT_RESPONDING", "FAIL", "MAINTENANCE"}
        return self.state not in {NodeState.DOWN, NodeState.ERROR, NodeState.FUTURE} and not (
            self.flags & blocked
        )

    def gres_total(self, name: str) -> int:
        return sum(g.count for g in self.gres if g.name == name)

    def gres_in_use(self, name: str) -> int:
        """Allocated count; TRES first, since 22.05's ``gres_used`` counts a shared card
        once however many of its shards are taken (``shard:a100:1(IDX:0)``)."""
        key = f"gres/{name}"
        if key in self.tres_used.counts:
            return self.tres_used[key]
        return sum(g.count for g in self.gres_used if g.name == name)


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: str
    default: bool = False
    state: str = "UP"
    max_time_min: int | None = None
    total_cpus: int = 0
    total_nodes: int = 0
    qos: str = ""


@dataclass(frozen=True, slots=True)
class AcctStep:
    step_id: str
    name: str
    state: JobState
    elapsed_s: int
    tres_alloc: Tres = field(default_factory=Tres)


@dataclass(frozen=True, slots=True)
class AcctJob:
    """One job as the accounting database remembers it (``sacct``)."""

    job_id: int
    cluster: str
    name: str
    user: str
    account: str
    partition: str
    qos: str
    state: JobState
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    elapsed_s: int
    tres_alloc: Tres = field(default_factory=Tres)
    tres_req: Tres = field(default_factory=Tres)
    nodes: str = ""
    exit_code: int | None = None
    array_job_id: int | None = None
    array_task_id: int | None = None
    het_job_id: int | None = None
    het_job_offset: int | None = None
    comment: str = ""
    time_limit_min: int | None = None
    work_dir: str = ""
    #: the output file as sacct reports it (23.02+; 22.05 keeps no output path)
    stdout_path: str = ""
    steps: tuple[AcctStep, ...] = ()


@dataclass(frozen=True, slots=True)
class Association:
    cluster: str
    account: str
    user: str = ""
    parent: str = ""
    partition: str = ""
    qos: tuple[str, ...] = ()
    default_qos: str = ""
    grp_tres: Tres = field(default_factory=Tres)
    grp_tres_mins: Tres = field(default_factory=Tres)
    max_tres_per_job: Tres = field(default_factory=Tres)
    shares: int | None = None


@dataclass(frozen=True, slots=True)
class Qos:
    name: str
    priority: int = 0
    preempt: tuple[str, ...] = ()
    preempt_mode: tuple[str, ...] = ()
    grp_tres: Tres = field(default_factory=Tres)
    max_tres_per_job: Tres = field(default_factory=Tres)
    max_tres_per_user: Tres = field(default_factory=Tres)
    flags: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True)
class SchedulerCounters:
    """slurmctld's job counters since its statistics were last reset (``sdiag``): one cheap
    call that tells a watcher that jobs were submitted or ended without listing the queue."""

    submitted: int = 0
    started: int = 0
    completed: int = 0
    canceled: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class Controller:
    """One ``SlurmctldHost`` as ``scontrol ping`` sees it (a backup in standby is UP too)."""

    index: int  # 0 = primary, 1 = first backup, ...
    role: str  # "primary", "backup1", ...
    host: str
    up: bool

    @property
    def primary(self) -> bool:
        return self.index == 0
