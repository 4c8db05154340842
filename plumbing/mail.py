"""E-mail: Jinja2 templates rendered into messages, sent through aiosmtplib; the mail part
of a configuration file (SMTP server, users' addresses).

Each template in a package's ``templates/<name>.txt.j2`` has a ``subject`` and a ``body``
block; values are plain text (no HTML), undefined names are errors. The daemons' notices
use this package's templates; accounting's alerts and reports use its own.

A mail is written in its reader's language: templates mark their text with ``_()`` (the one
catalogue, :mod:`translations`) and are rendered per locale. The reader's language is the
one they chose (``languages``, by user name or address, or what the portal saved for them),
else the configuration's ``locale``: the site's default.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import aiosmtplib
import yaml
from babel import Locale
from babel.dates import format_skeleton
from babel.numbers import format_currency, format_decimal, format_percent
from jinja2 import Environment, PackageLoader, StrictUndefined
from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate

from plumbing.validation import flatten
from translations import DEFAULT, LOCALES, catalogue, normalise

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
    """The mail templates of one package (``<package>/templates/<name>.txt.j2``), rendered
    in each reader's language."""

    def __init__(self, package: str) -> None:
        self.package = package
        self._envs: dict[str, Environment] = {}

    def env(self, locale: str | None = None) -> Environment:
        """The templates with ``_()`` speaking ``locale`` (one environment per language)."""
        key = normalise(locale)
        if key not in self._envs:
            env = Environment(
                loader=PackageLoader(self.package, "templates"),
                undefined=StrictUndefined,
                autoescape=False,  # noqa: S701 (plain-text mail, never HTML)
                keep_trailing_newline=True,
                extensions=["jinja2.ext.i18n"],
            )
            env.install_gettext_translations(  # type: ignore[attr-defined]
                catalogue(key), newstyle=True
            )
            env.filters.update(_formats(key))
            self._envs[key] = env
        return self._envs[key]

    def render(
        self, template: str, context: Mapping[str, Any], locale: str | None = None
    ) -> tuple[str, str]:
        """``(subject, body)`` of a template, in ``locale``."""
        tpl = self.env(locale).get_template(f"{template}.txt.j2")
        ctx = tpl.new_context(dict(context))
        subject = "".join(tpl.blocks["subject"](ctx)).strip()
        body = "".join(tpl.blocks["body"](ctx))
        return " ".join(subject.split()), body


def _formats(locale: str) -> dict[str, Callable[..., str]]:
    """The templates' filters for numbers, percentages, money and months, ``locale``'s way
    (``1,234.50``; ``90.0%``; ``¥1,234.50`` or ``CN¥1,234.50``; ``2026年11月``)."""
    where = Locale.parse(locale)

    def number(value: Any, digits: int = 2) -> str:
        pattern = "#,##0" + ("." + "0" * digits if digits else "")
        return str(format_decimal(value, format=pattern, locale=where))

    def percent(ratio: Any, digits: int = 1) -> str:
        pattern = "#,##0" + ("." + "0" * digits if digits else "") + "%"
        return str(format_percent(ratio, format=pattern, locale=where))

    def money(amount: Any, currency: str = "CNY") -> str:
        return str(format_currency(amount, currency, locale=where))

    def month(t: datetime) -> str:
        return str(format_skeleton("yMMM", t, locale=where))

    return {"number": number, "percent": percent, "money": money, "month": month}


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


def _locale() -> fields.String:
    return fields.String(validate=validate.OneOf(sorted(LOCALES)))


class MailSchema(Schema):
    """The mail part of a configuration: ``smtp``, ``user_email`` (a pattern with
    ``{user}``), ``emails`` (user name -> address, overriding the pattern), ``locale`` (the
    language of mail to readers who chose none: the site's default), ``languages`` (user name
    or address -> the language they read) and ``site_name`` (what mail signs with)."""

    class Meta:
        unknown = RAISE

    smtp = fields.Nested(SmtpSchema, load_default=lambda: SmtpSchema().load({}))
    user_email = fields.String(load_default="{user}@localhost.localdomain")
    emails = fields.Dict(keys=fields.String(), values=fields.Email(), load_default=dict)
    locale = fields.String(load_default=DEFAULT, validate=validate.OneOf(sorted(LOCALES)))
    languages = fields.Dict(keys=fields.String(), values=_locale(), load_default=dict)
    site_name = fields.String(load_default="AIPool", validate=validate.Length(1, 64))


@dataclass(frozen=True, slots=True)
class MailConfig:
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    user_email: str = "{user}@localhost.localdomain"
    emails: Mapping[str, str] = field(default_factory=dict)
    #: the site's default language for mail
    locale: str = DEFAULT
    #: user name or address -> language
    languages: Mapping[str, str] = field(default_factory=dict)
    site_name: str = "AIPool"

    def address(self, user: str) -> str:
        return self.emails.get(user) or self.user_email.format(user=user)

    def language(self, reader: str) -> str:
        """The language of ``reader``, an address (or a user name)."""
        return self.languages.get(reader) or self.locale

    def user_language(self, user: str) -> str:
        """The language of the user ``user``: by their name, else by their address."""
        return self.languages.get(user) or self.language(self.address(user))


def mail_config(loaded: Mapping[str, Any]) -> MailConfig:
    """A :class:`MailConfig` from what :class:`MailSchema` (or a schema built on it) loaded;
    a ``user_email`` pattern that does not make addresses raises :class:`MailError`."""
    if "{user}" not in loaded["user_email"]:
        raise MailError("user_email must contain {user}")
    check_address(loaded["user_email"].format(user="someone"))
    return MailConfig(
        SmtpSettings(**loaded["smtp"]),
        loaded["user_email"],
        loaded["emails"],
        loaded["locale"],
        loaded["languages"],
        loaded["site_name"],
    )


def by_language(
    readers: Sequence[str], language: Callable[[str], str]
) -> dict[str, tuple[str, ...]]:
    """Readers grouped by the language they read, in their order: one mail per language."""
    out: dict[str, tuple[str, ...]] = {}
    for r in dict.fromkeys(readers):
        lang = language(r)
        out[lang] = (*out.get(lang, ()), r)
    return out


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
