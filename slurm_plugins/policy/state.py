"""The policy daemon's files: its state (which holds are ours…), the decision log, a lock.

The state keeps its previous version (:class:`~plumbing.store.JsonStore`), so a
daemon killed at any moment finds a whole file on restart. The decision log keeps the
latest reasons per job for the portal and ``aipool job ID``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plumbing.store import JsonStore, exclusive, write_atomic
from slurm_plugins.policy.snapshot import DaemonState

STATE = "state.json"
REASONS = "reasons.json"
LOCK = "daemon.lock"
#: Decisions older than this are dropped from the log.
REASONS_KEEP_S = 7 * 86400
#: The state and the decision log name every job's tenant and share: the daemon's user and
#: its group (the portal's service group, which shows the reasons) read them, nobody else.
PRIVATE = 0o640


class StateLocked(RuntimeError):
    """Another daemon holds this state directory."""


class StateStore(JsonStore[DaemonState]):
    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        super().__init__(
            self.dir / STATE, DaemonState, keep_previous=True, what="policy state", mode=PRIVATE
        )

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
        write_atomic(self.path, json.dumps(data, sort_keys=True), mode=PRIVATE)

    def reasons_for(self, job_id: int) -> list[str]:
        entry = self.read().get(str(job_id))
        return list(entry.get("reasons", [])) if isinstance(entry, dict) else []


def reasons_for(job_id: int, state_dir: Path) -> list[str]:
    """Why the policy daemon last did what it did to ``job_id`` (for ``aipool job ID``)."""
    return ReasonLog(state_dir).reasons_for(job_id)
