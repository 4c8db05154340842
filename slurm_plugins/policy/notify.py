"""Telling people what the daemon did: a small interface and its sinks.

The idle reaper's warnings, reclaims and migrations reach the job's owner and the admins
through a :class:`Notifier`. There are a log sink, a JSON-lines file sink (which the portal
and tests read) and an e-mail sink (through :mod:`accounting.mail`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from slurm_plugins.policy import codec
from slurm_plugins.policy.plan import Notification

if TYPE_CHECKING:
    from accounting.mail import Mailer

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


class EmailSink:
    """Mails each notification to its users (a job's owner, the admins), once per job and
    kind: the idle reaper may report the same stop on several cycles.

    ``address`` maps a user name to an e-mail address; users it maps to ``None`` get no mail.
    Sending is :class:`accounting.mail.Mailer`'s (aiosmtplib, Jinja2 template ``idle_stop``).
    """

    def __init__(
        self,
        mailer: Mailer,
        address: Callable[[str], str | None],
        *,
        remember: int = 10_000,
    ) -> None:
        self.mailer = mailer
        self.address = address
        self.remember = remember
        self._sent: dict[tuple[int, str], None] = {}

    def send(self, note: Notification) -> None:
        from accounting.mail import Mail, MailError, render

        # Node alerts (job 0) come once per episode from the health checker already.
        key = (note.job_id, note.kind)
        if note.job_id and key in self._sent:
            return
        to = tuple(dict.fromkeys(a for u in note.users if (a := self.address(u))))
        if not to:
            return
        subject, body = render(
            "idle_stop",
            {"subject": note.subject, "text": note.text, "job_id": note.job_id, "kind": note.kind},
        )
        try:
            self.mailer.send([Mail(to, subject, body)])
        except MailError as exc:
            raise OSError(str(exc)) from exc  # MultiSink logs sink failures and goes on
        if note.job_id:
            self._sent[key] = None
        while len(self._sent) > self.remember:
            del self._sent[next(iter(self._sent))]


def email_sink(config_path: Path) -> EmailSink:
    """An :class:`EmailSink` from accounting's alert configuration (SMTP server and the users'
    addresses); the admins' own account (``root``) gets no mail."""
    from accounting.alerts import AlertConfigError, load_config_file
    from accounting.mail import Mailer

    try:
        cfg = load_config_file(config_path)
    except AlertConfigError as exc:
        raise ValueError(f"notify.email: {exc}") from exc
    return EmailSink(Mailer(cfg.smtp), lambda u: None if u == "root" else cfg.address(u))


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
