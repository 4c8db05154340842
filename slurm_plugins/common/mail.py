"""E-mail: Jinja2 templates rendered into messages, sent through aiosmtplib; the mail part
of a configuration file (SMTP server, users' addresses).

Each template in a package's ``templates/<name>.txt.j2`` has a ``subject`` and a ``body``
block; values are plain text (no HTML), undefined names are errors. The daemons' notices
use this package's templates; accounting's alerts and reports use its own.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import aiosmtplib
import yaml
from jinja2 import Environment, PackageLoader, StrictUndefined
from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate

from slurm_plugins.validation import flatten

_ADDRESS = re.compile(r"^[^@\s<>,;\"']+@[^@\s<>,;\"']+\.[^@\s<>,;\"']+$")


class MailError(Exception):
    """A message that could not be built or sent, with why."""


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    host: str = "127.0.0.1"
    port: int = 25
    sender: str = "aipool@localhost"
    #: ``starttls`` upgrades a plain connection; ``tls`` connects with TLS from the start
    security: str = "none"
    username: str | None = None
    #: read from this environment variable, never from a file in the repository
    password_env: str = "AIPOOL_SMTP_PASSWORD"  # noqa: S105 (a variable's name)
    timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.security not in ("none", "starttls", "tls"):
            raise MailError(f"security must be none, starttls or tls, not {self.security!r}")
        if not 1 <= self.port <= 65535:
            raise MailError(f"port {self.port} is out of range")
        check_address(self.sender)


def check_address(address: str) -> str:
    if not _ADDRESS.match(address):
        raise MailError(f"{address!r} is not an e-mail address")
    return address


@dataclass(frozen=True, slots=True)
class Mail:
    to: tuple[str, ...]
    subject: str
    body: str
    attachments: tuple[tuple[str, bytes, str], ...] = field(default=())


class MailTemplates:
    """The mail templates of one package (``<package>/templates/<name>.txt.j2``)."""

    def __init__(self, package: str) -> None:
        self.env = Environment(
            loader=PackageLoader(package, "templates"),
            undefined=StrictUndefined,
            autoescape=False,  # noqa: S701 (plain-text mail, never HTML)
            keep_trailing_newline=True,
        )

    def render(self, template: str, context: Mapping[str, Any]) -> tuple[str, str]:
        """``(subject, body)`` of a template."""
        tpl = self.env.get_template(f"{template}.txt.j2")
        ctx = tpl.new_context(dict(context))
        subject = "".join(tpl.blocks["subject"](ctx)).strip()
        body = "".join(tpl.blocks["body"](ctx))
        return " ".join(subject.split()), body


def compose(sender: str, mail: Mail) -> EmailMessage:
    if not mail.to:
        raise MailError("a mail needs at least one recipient")
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = ", ".join(check_address(a) for a in mail.to)
    msg["Subject"] = mail.subject
    msg.set_content(mail.body)
    for name, data, mime in mail.attachments:
        main, _, sub = mime.partition("/")
        msg.add_attachment(data, maintype=main, subtype=sub, filename=name)
    return msg


class Mailer:
    """Sends mails over one SMTP connection per batch."""

    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings

    async def send_async(self, mails: Sequence[Mail]) -> None:
        s = self.settings
        if not mails:
            return
        messages = [compose(s.sender, m) for m in mails]
        password = os.environ.get(s.password_env) if s.username else None
        smtp = aiosmtplib.SMTP(
            hostname=s.host,
            port=s.port,
            use_tls=s.security == "tls",
            start_tls=s.security == "starttls",
            timeout=s.timeout_s,
        )
        try:
            async with smtp:
                if s.username:
                    await smtp.login(s.username, password or "")
                for msg in messages:
                    await smtp.send_message(msg)
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise MailError(f"sending through {s.host}:{s.port} failed: {exc}") from exc

    def send(self, mails: Sequence[Mail]) -> None:
        asyncio.run(self.send_async(mails))


# ---------------------------------------------------------------------- configuration
class SmtpSchema(Schema):
    class Meta:
        unknown = RAISE

    host = fields.String(load_default="127.0.0.1")
    port = fields.Integer(load_default=25, validate=validate.Range(1, 65535))
    sender = fields.Email(load_default="aipool@localhost.localdomain")
    security = fields.String(
        load_default="none", validate=validate.OneOf(["none", "starttls", "tls"])
    )
    username = fields.String(load_default=None, allow_none=True)
    password_env = fields.String(load_default="AIPOOL_SMTP_PASSWORD")


class MailSchema(Schema):
    """The mail part of a configuration: ``smtp``, ``user_email`` (a pattern with
    ``{user}``) and ``emails`` (user name -> address, overriding the pattern)."""

    class Meta:
        unknown = RAISE

    smtp = fields.Nested(SmtpSchema, load_default=lambda: SmtpSchema().load({}))
    user_email = fields.String(load_default="{user}@localhost.localdomain")
    emails = fields.Dict(keys=fields.String(), values=fields.Email(), load_default=dict)


@dataclass(frozen=True, slots=True)
class MailConfig:
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    user_email: str = "{user}@localhost.localdomain"
    emails: Mapping[str, str] = field(default_factory=dict)

    def address(self, user: str) -> str:
        return self.emails.get(user) or self.user_email.format(user=user)


def mail_config(loaded: Mapping[str, Any]) -> MailConfig:
    """A :class:`MailConfig` from what :class:`MailSchema` (or a schema built on it) loaded;
    a ``user_email`` pattern that does not make addresses raises :class:`MailError`."""
    if "{user}" not in loaded["user_email"]:
        raise MailError("user_email must contain {user}")
    check_address(loaded["user_email"].format(user="someone"))
    return MailConfig(SmtpSettings(**loaded["smtp"]), loaded["user_email"], loaded["emails"])


def load_mail_config(path: Path) -> MailConfig:
    """The mail part of a YAML file (other sections are left to their owners); every
    problem is a :class:`MailError` naming the file."""
    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise MailError(f"{path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise MailError(f"{path}: the top level must be a mapping")
    try:
        return mail_config(MailSchema().load(raw, unknown=EXCLUDE))
    except ValidationError as exc:
        raise MailError(f"{path}: {'; '.join(flatten(exc.messages))}") from exc
    except MailError as exc:
        raise MailError(f"{path}: {exc}") from exc
