"""Telling people what the daemon did: a small interface and its sinks.

The idle reaper's warnings, reclaims and migrations reach the job's owner and the admins
through a :class:`Notifier`. For now there are a log sink and a JSON-lines file sink (which
the portal and tests read); e-mail joins as another sink.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from slurm_plugins.policy import codec
from slurm_plugins.policy.plan import Notification

log = logging.getLogger("aipool.policy.notify")


class Notifier(Protocol):
    def send(self, note: Notification) -> None: ...


class LogSink:
    """Each notification as one log line (``aipool.policy.notify``)."""

    def send(self, note: Notification) -> None:
        log.warning(
            "to %s: %s: %s",
            ",".join(note.users),
            note.subject,
            note.text,
            extra={"job": note.job_id},
        )


class FileSink:
    """Appends each notification as a JSON line with the time it was sent."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def send(self, note: Notification) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"at": time.time(), **codec.dump(note)}) + "\n")


class MultiSink:
    def __init__(self, sinks: Sequence[Notifier]) -> None:
        self.sinks = list(sinks)

    def send(self, note: Notification) -> None:
        for s in self.sinks:
            try:
                s.send(note)
            except OSError as exc:  # one broken sink must not stop the others or the cycle
                log.error("notification sink %s failed: %s", type(s).__name__, exc)


def read_notifications(path: Path) -> list[dict[str, object]]:
    """What a :class:`FileSink` wrote (for the portal and tests)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
