"""The daemon's files: its state (which holds are ours…), the decision log, a lock.

The state is written atomically (temp file, fsync, rename) and the previous version kept,
so a daemon killed at any moment finds a whole file on restart. The decision log keeps the
latest reasons per job for the portal and ``aipool job ID``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from slurm_plugins.policy import codec
from slurm_plugins.policy.snapshot import DaemonState

log = logging.getLogger("aipool.policy")

STATE = "state.json"
REASONS = "reasons.json"
LOCK = "daemon.lock"
#: Decisions older than this are dropped from the log.
REASONS_KEEP_S = 7 * 86400


class StateLocked(RuntimeError):
    """Another daemon holds this state directory."""


def write_atomic(path: Path, text: str, *, keep_previous: bool = True) -> None:
    """Replace ``path`` with ``text`` all at once (a crash leaves the old or the new file);
    the old one is kept as ``<name>.prev`` unless told otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if keep_previous and path.exists():
        os.replace(path, path.with_name(path.name + ".prev"))
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextmanager
def exclusive(directory: Path, lock: str, busy: Exception) -> Iterator[None]:
    """Hold ``directory/lock`` (flock) for the block; raise ``busy`` if another process has it."""
    directory.mkdir(parents=True, exist_ok=True)
    fd: IO[str] = (directory / lock).open("a")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise busy from exc
        yield
    finally:
        fd.close()


class StateStore:
    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.path = self.dir / STATE

    def load(self) -> DaemonState:
        """The saved state; the previous copy if the file is damaged; empty if none."""
        for p in (self.path, self.path.with_name(STATE + ".prev")):
            if not p.exists():
                continue
            try:
                return codec.load(DaemonState, json.loads(p.read_text()))
            except (ValueError, OSError) as exc:
                log.error("policy state %s is unreadable (%s); trying the previous copy", p, exc)
        return DaemonState()

    def save(self, state: DaemonState) -> None:
        write_atomic(self.path, json.dumps(codec.dump(state), sort_keys=True))

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's lock: two daemons must never steer one cluster."""
        with exclusive(self.dir, LOCK, StateLocked(f"another policy daemon runs on {self.dir}")):
            yield


class ReasonLog:
    """Latest decisions per job: ``{job_id: {"at": t, "reasons": [...]}}``."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / REASONS

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def record(self, reasons: Mapping[int, Sequence[str]], now: float) -> None:
        if not reasons:
            return
        data = {k: v for k, v in self.read().items() if v.get("at", 0) > now - REASONS_KEEP_S}
        for job_id, rs in reasons.items():
            data[str(job_id)] = {"at": now, "reasons": list(rs)}
        write_atomic(self.path, json.dumps(data, sort_keys=True))

    def reasons_for(self, job_id: int) -> list[str]:
        entry = self.read().get(str(job_id))
        return list(entry.get("reasons", [])) if isinstance(entry, dict) else []


def reasons_for(job_id: int, state_dir: Path) -> list[str]:
    """Why the policy daemon last did what it did to ``job_id`` (for ``aipool job ID``)."""
    return ReasonLog(state_dir).reasons_for(job_id)
