"""Telling people what a daemon did: a notification, a small interface and its sinks.

The idle reaper's warnings, reclaims and migrations and the health checker's node alerts
reach the job's owner and the admins through a :class:`Notifier`. There are a log sink, a
JSON-lines file sink (which the portal and tests read), an e-mail sink (through
:mod:`plumbing.mail`) and a webhook sink (a JSON receiver or a WeCom, DingTalk or
Feishu robot, through :mod:`plumbing.webhooks`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx

from plumbing import codec, webhooks
from plumbing.mail import (
    Mail,
    Mailer,
    MailError,
    MailTemplates,
    by_language,
    load_mail_config,
)
from plumbing.retry import until_ok
from translations import DEFAULT, Message

log = logging.getLogger("aipool.notify")

_TEMPLATES = MailTemplates("plumbing")


@dataclass(frozen=True, slots=True)
class Notification:
    """A message for a job's owner and the admins (idle warnings, reclaims, migrations,
    node alerts); ``job_id`` 0 when it is about no job.

    ``subject`` and ``text`` are the English of logs and files; ``title`` and ``body``, where
    the daemon gives them, are the same in any language, for readers it mails."""

    kind: str
    job_id: int
    users: tuple[str, ...]
    subject: str
    text: str
    title: Message | None = None
    body: Message | None = None

    def in_language(self, locale: str) -> tuple[str, str]:
        """``(subject, text)`` in ``locale`` (the English where no translation was given)."""
        subject = self.title.render(locale) if self.title else self.subject
        return subject, self.body.render(locale) if self.body else self.text


class Notifier(Protocol):
    def send(self, note: Notification) -> None: ...


class LogSink:
    """Each notification as one log line (``aipool.notify``)."""

    def send(self, note: Notification) -> None:
        log.warning(
            "to %s: %s: %s",
            ",".join(note.users),
            note.subject,
            note.text,
            extra={"job": note.job_id},
        )


class FileSink:
    """Appends each notification as a JSON line with the time it was sent, to a file the
    daemon's user and group read (0640): the lines name users and their jobs."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def send(self, note: Notification) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o640)
        with os.fdopen(fd, "a") as f:
            os.fchmod(fd, 0o640)  # one written before, wider
            f.write(json.dumps({"at": time.time(), **codec.dump(note)}) + "\n")


class EmailSink:
    """Mails each notification to its users (a job's owner, the admins), once per job and
    kind: the idle reaper may report the same stop on several cycles.

    ``address`` maps a user name to an e-mail address; users it maps to ``None`` get no mail.
    ``language`` maps a user name to the language they read: each language gets its own mail.
    Sending is :class:`~plumbing.mail.Mailer`'s (aiosmtplib, template ``idle_stop``).
    """

    def __init__(
        self,
        mailer: Mailer,
        address: Callable[[str], str | None],
        *,
        language: Callable[[str], str] = lambda _user: DEFAULT,
        site_name: str = "AIPool",
        remember: int = 10_000,
    ) -> None:
        self.mailer = mailer
        self.address = address
        self.language = language
        self.site_name = site_name
        self.remember = remember
        self._sent: dict[tuple[int, str], None] = {}

    def send(self, note: Notification) -> None:
        # Node alerts (job 0) come once per episode from the health checker already.
        key = (note.job_id, note.kind)
        if note.job_id and key in self._sent:
            return
        readers = {a: u for u in note.users if (a := self.address(u))}
        if not readers:
            return
        mails = []
        for lang, to in by_language(list(readers), lambda a: self.language(readers[a])).items():
            subject, text = note.in_language(lang)
            context = {
                "subject": subject,
                "text": text,
                "job_id": note.job_id,
                "site": self.site_name,
            }
            mails.append(Mail(to, *_TEMPLATES.render("idle_stop", context, lang)))
        try:
            self.mailer.send(mails)
        except MailError as exc:
            raise OSError(str(exc)) from exc  # MultiSink logs sink failures and goes on
        if note.job_id:
            self._sent[key] = None
        while len(self._sent) > self.remember:
            del self._sent[next(iter(self._sent))]


def email_sink(config_path: Path) -> EmailSink:
    """An :class:`EmailSink` from the mail part of a configuration file (accounting's alert
    configuration: SMTP server and the users' addresses); the admins' own account (``root``)
    gets no mail. A file that does not validate raises ValueError naming it."""
    try:
        cfg = load_mail_config(config_path)
    except MailError as exc:
        raise ValueError(f"notify.email: {exc}") from exc
    return EmailSink(
        Mailer(cfg.smtp),
        lambda u: None if u == "root" else cfg.address(u),
        language=cfg.user_language,
        site_name=cfg.site_name,
    )


class WebhookSink:
    """Posts each notification to one webhook in the site's language, retrying a failed post
    with doubling waits; a post that fails every attempt raises OSError (MultiSink logs it
    without the URL, a credential, and goes on)."""

    def __init__(
        self,
        hook: webhooks.Hook,
        *,
        locale: str = DEFAULT,
        attempts: int = 3,
        first_wait_s: float = 1.0,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.hook = hook
        self.locale = locale
        self.attempts = max(1, attempts)
        self.first_wait_s = first_wait_s
        self.client = client or httpx.Client(timeout=10.0)
        self.sleep = sleep

    def send(self, note: Notification) -> None:
        title, text = note.in_language(self.locale)
        document = {
            "kind": note.kind,
            "job_id": note.job_id,
            "users": list(note.users),
            "title": title,
            "text": text,
            "at": time.time(),
        }
        message = webhooks.Message(title, text, document)

        def failed(attempt: int, outcome: webhooks.Outcome) -> None:
            log.warning(
                "%s webhook: attempt %d of %d failed: %s",
                self.hook.type.value,
                attempt,
                self.attempts,
                outcome.error,
            )

        outcome = until_ok(
            lambda: webhooks.post(self.client, self.hook, message, time.time()),
            lambda outcome: outcome.ok,
            self.attempts,
            self.first_wait_s,
            self.sleep,
            failed,
        )
        if outcome.ok:
            return
        raise OSError(f"{self.hook.type.value} webhook: {outcome.error}")


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
