"""An accounting database per test: SQLite with accounting's tables from its own migrations
(migrated once per session, copied per test). Nothing of the portal. A real SMTP server
(aiosmtpd) for the tests that mail, and a webhook receiver on loopback for the alert tests."""

from __future__ import annotations

import email
import email.policy
import shutil
import socket
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import Engine, create_engine

from accounting import migrate
from plumbing.mail import Mailer, SmtpSettings
from tests.unit.accounting.receivers import Receiver, serving


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database file with accounting's tables at the newest revision, built once."""
    path = tmp_path_factory.mktemp("acct-db") / "migrated.db"
    engine = create_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    engine.dispose()
    return path


@pytest.fixture
def engine(migrated_db: Path, tmp_path: Path) -> Iterator[Engine]:
    path = tmp_path / "acct.db"
    shutil.copyfile(migrated_db, path)
    eng = create_engine(f"sqlite:///{path}")
    yield eng
    eng.dispose()


class Inbox:
    def __init__(self) -> None:
        self.mails: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        # the default policy decodes headers (a Chinese subject comes RFC 2047-encoded)
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.mails.append((list(envelope.rcpt_tos), msg))
        return "250 OK"

    def take(self) -> list[tuple[list[str], Message]]:
        out, self.mails = self.mails, []
        return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, Mailer]]:
    inbox = Inbox()
    port = free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        yield inbox, Mailer(SmtpSettings("127.0.0.1", port, "aipool@example.org"))
    finally:
        ctl.stop()


@pytest.fixture(scope="module")
def server() -> Iterator[Receiver]:
    with serving() as srv:
        yield srv


@pytest.fixture
def receiver(server: Receiver) -> Receiver:
    return server.reset()
