"""Node and task lists in the CSV format of Alibaba's GPU-sharing trace (cluster-trace-gpu-v2023).

Nodes: ``sn,cpu_milli,memory_mib,gpu,model``. Tasks: ``name,cpu_milli,memory_mib,num_gpu,
gpu_milli`` and optionally ``gpu_spec,qos,pod_phase,creation_time,deletion_time,
scheduled_time``. Every problem is reported with the file and line it is on.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gres.placement import MILLI, Request

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TASK_OPTIONAL = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")


class TraceError(ValueError):
    """A node or task list that cannot be used, with the place of the problem."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node of the virtual cluster, as the trace lists it."""

    name: str
    cpu_milli: int
    mem_mib: int
    gpu_count: int
    gpu_model: str


@dataclass(frozen=True, slots=True)
class Task:
    """One task (a pod of the trace, a Slurm job for us) and its life, when known."""

    name: str
    request: Request
    qos: str = ""
    creation: int | None = None
    deletion: int | None = None
    scheduled: int | None = None


def load_nodes(path: Path) -> list[NodeSpec]:
    """Read a node list; nodes come back sorted by name (the simulator's tie order)."""
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    for where, row in _rows(path, NODE_COLUMNS, ()):
        name = row["sn"].strip()
        if not name:
            raise TraceError(f"{where}: empty node name (column sn)")
        if name in seen:
            raise TraceError(f"{where}: node {name} is listed twice")
        seen.add(name)
        gpus = _int(row, "gpu", where)
        model = row["model"].strip()
        if gpus and not model:
            raise TraceError(f"{where}: node {name} has {gpus} GPUs but no model")
        nodes.append(
            NodeSpec(
                name, _int(row, "cpu_milli", where), _int(row, "memory_mib", where), gpus, model
            )
        )
    if not nodes:
        raise TraceError(f"{path}: no nodes")
    return sorted(nodes, key=lambda n: n.name)


def load_tasks(path: Path) -> list[Task]:
    """Read a task list in file order."""
    tasks: list[Task] = []
    for where, row in _rows(path, TASK_COLUMNS, TASK_OPTIONAL):
        name = row["name"].strip()
        if not name:
            raise TraceError(f"{where}: empty task name")
        count = _int(row, "num_gpu", where)
        milli = min(_int(row, "gpu_milli", where), MILLI) if count else 0
        if count and not milli:
            raise TraceError(f"{where}: task {name} asks for {count} GPUs of 0 milli")
        try:
            request = Request.from_spec(
                _int(row, "cpu_milli", where),
                _int(row, "memory_mib", where),
                milli,
                count,
                (row.get("gpu_spec") or "").strip(),
            )
        except ValueError as exc:
            raise TraceError(f"{where}: task {name}: {exc}") from None
        tasks.append(
            Task(
                name,
                request,
                (row.get("qos") or "").strip(),
                _opt_int(row, "creation_time", where),
                _opt_int(row, "deletion_time", where),
                _opt_int(row, "scheduled_time", where),
            )
        )
    if not tasks:
        raise TraceError(f"{path}: no tasks")
    return tasks


def _rows(
    path: Path, required: tuple[str, ...], optional: tuple[str, ...]
) -> Iterator[tuple[str, dict[str, str]]]:
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(
                f"{path}: missing column(s) {', '.join(missing)}; expected {','.join(required)}"
                + (f" and optionally {','.join(optional)}" if optional else "")
            )
        reader.fieldnames = header
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row:
                raise TraceError(f"{where}: more fields than the header has")
            yield where, row


def _int(row: dict[str, str], column: str, where: str) -> int:
    text = (row.get(column) or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"{where}: {column} must be a whole number, got {text!r}") from None
    if value < 0:
        raise TraceError(f"{where}: {column} must not be negative, got {value}")
    return value


def _opt_int(row: dict[str, str], column: str, where: str) -> int | None:
    return _int(row, column, where) if (row.get(column) or "").strip() else None
