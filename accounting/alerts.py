"""The alert configuration file: mail, rules and channels, and the keys that came before
rules (:mod:`accounting.alert_legacy`); and the monthly report's mail.

Rules are evaluated by :mod:`accounting.alert_eval` and delivered by
:mod:`accounting.alert_delivery`, once per episode with a recovery message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate
from sqlalchemy import Connection

from accounting.alert_delivery import DeliverySettings
from accounting.alert_legacy import legacy_rules
from accounting.alert_rules import (
    AlertRuleError,
    Channel,
    ChannelSchema,
    Rule,
    RuleSchema,
    check_references,
    lines,
)
from accounting.report import Dim, build, month_start, next_month
from accounting.table import Brand
from plumbing.mail import (
    Mail,
    MailConfig,
    MailError,
    MailSchema,
    MailTemplates,
    SmtpSettings,
    by_language,
    mail_config,
)
from translations import LOCALES

TEMPLATES = MailTemplates("accounting")


class AlertConfigError(ValueError):
    """An alert configuration that does not validate; the message lists every problem."""


# ---------------------------------------------------------------------- configuration
class _Strict(Schema):
    class Meta:
        unknown = RAISE


class _Budget(_Strict):
    card_hours = fields.Decimal(required=True, validate=validate.Range(min=0, min_inclusive=False))
    warn_at = fields.Decimal(load_default=Decimal("0.8"), validate=validate.Range(0, 1))
    recipients = fields.List(fields.Email(), load_default=list)


class _Users(_Strict):
    card_hours = fields.Dict(
        keys=fields.String(),
        values=fields.Decimal(validate=validate.Range(min=0)),
        load_default=dict,
    )
    default_card_hours = fields.Decimal(load_default=None, allow_none=True)
    warn_at = fields.Decimal(load_default=Decimal(1), validate=validate.Range(0, 1))


class _Report(_Strict):
    recipients = fields.List(fields.Email(), load_default=list)
    by = fields.String(load_default="project", validate=validate.OneOf([d.value for d in Dim]))


class _Prometheus(_Strict):
    #: the server's base URL; rules query its ``/api/v1/query``
    url = fields.Url(required=True, schemes={"http", "https"}, require_tld=False)


class _Delivery(_Strict):
    attempts = fields.Integer(load_default=3, validate=validate.Range(1, 10))
    backoff_s = fields.Float(load_default=2.0, validate=validate.Range(0, 300))
    timeout_s = fields.Float(load_default=10.0, validate=validate.Range(0.1, 120))


class _Config(MailSchema):
    """The mail part (``smtp``, ``user_email``, ``emails``, which the daemons' notices read
    from the same file) and the alerts'."""

    platform_admins = fields.List(fields.Email(), load_default=list)
    tenants = fields.Dict(keys=fields.String(), values=fields.Nested(_Budget), load_default=dict)
    users = fields.Nested(_Users, load_default=lambda: _Users().load({}))
    pools = fields.Boolean(load_default=True)
    monthly_report = fields.Nested(_Report, load_default=lambda: _Report().load({}))
    rules = fields.List(fields.Nested(RuleSchema), load_default=list)
    channels = fields.List(fields.Nested(ChannelSchema), load_default=list)
    prometheus = fields.Nested(_Prometheus, load_default=None, allow_none=True)
    delivery = fields.Nested(_Delivery, load_default=lambda: _Delivery().load({}))


@dataclass(frozen=True, slots=True)
class Budget:
    card_hours: Decimal
    warn_at: Decimal
    recipients: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AlertConfig:
    #: the SMTP server, the users' addresses, the languages and the site's name
    mail: MailConfig = field(default_factory=MailConfig)
    platform_admins: tuple[str, ...] = ()
    #: Slurm account (a domain or a project) -> its monthly card-hour budget
    tenants: Mapping[str, Budget] = field(default_factory=dict)
    user_card_hours: Mapping[str, Decimal] = field(default_factory=dict)
    default_user_card_hours: Decimal | None = None
    user_warn_at: Decimal = Decimal(1)
    pools: bool = True
    report_recipients: tuple[str, ...] = ()
    report_by: str = "project"
    #: the file's rules and channels, the keys before rules included
    rules: tuple[Rule, ...] = ()
    channels: tuple[Channel, ...] = ()
    prometheus_url: str | None = None
    delivery: DeliverySettings = field(default_factory=DeliverySettings)

    @property
    def smtp(self) -> SmtpSettings:
        return self.mail.smtp

    def address(self, user: str) -> str:
        return self.mail.address(user)

    def with_saved_languages(self, saved: Mapping[str, str]) -> AlertConfig:
        """The users' own choices (the portal's, by user name and address) before the
        configuration's ``languages``."""
        languages = {**self.mail.languages, **{k: v for k, v in saved.items() if v in LOCALES}}
        return replace(self, mail=replace(self.mail, languages=languages))


def load_config(raw: Mapping[str, Any]) -> AlertConfig:
    """Validate an alert configuration (e.g. from YAML); every problem in one error."""
    locale = raw.get("locale") if raw.get("locale") in LOCALES else None
    try:
        c = _Config().load(dict(raw))
    except ValidationError as exc:
        found = "; ".join(lines(exc.messages if isinstance(exc.messages, dict) else {}, locale))
        raise AlertConfigError(f"alert configuration: {found}") from exc
    try:
        mail = mail_config(c)
    except MailError as exc:
        raise AlertConfigError(f"alert configuration: {exc}") from exc
    old_rules, old_channels = legacy_rules(c)
    rules, channels = [*c["rules"], *old_rules], [*c["channels"], *old_channels]
    try:
        check_references(rules, channels)
    except AlertRuleError as exc:
        found = "; ".join(lines(exc.errors, locale))
        raise AlertConfigError(f"alert configuration: {found}") from exc
    return AlertConfig(
        mail=mail,
        platform_admins=tuple(c["platform_admins"]),
        tenants={
            k: Budget(v["card_hours"], v["warn_at"], tuple(v["recipients"]))
            for k, v in c["tenants"].items()
        },
        user_card_hours=c["users"]["card_hours"],
        default_user_card_hours=c["users"]["default_card_hours"],
        user_warn_at=c["users"]["warn_at"],
        pools=c["pools"],
        report_recipients=tuple(c["monthly_report"]["recipients"]),
        report_by=c["monthly_report"]["by"],
        rules=tuple(rules),
        channels=tuple(channels),
        prometheus_url=(c["prometheus"] or {}).get("url"),
        delivery=DeliverySettings(**c["delivery"]),
    )


def load_config_file(path: Path) -> AlertConfig:
    """:func:`load_config` of a YAML file; a file that cannot be read says which and why."""
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise AlertConfigError(f"{path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise AlertConfigError(f"{path}: the top level must be a mapping")
    try:
        return load_config(raw)
    except AlertConfigError as exc:
        raise AlertConfigError(f"{path}: {exc}") from exc


def monthly_report_mails(
    conn: Connection, cfg: AlertConfig, month: datetime, brand: Brand | None = None
) -> list[Mail]:
    """The month's report as a PDF attachment for ``monthly_report.recipients``: one mail
    (and PDF) per language they read."""
    from accounting.pdf import to_pdf

    if not cfg.report_recipients:
        return []
    brand = brand or Brand(cfg.mail.site_name)
    start = month_start(month)
    rep = build(conn, start, next_month(start), Dim(cfg.report_by))
    name = start.strftime("%Y-%m")
    context = {"month": start, "total": rep.total, "site": brand.name}
    mails = []
    for lang, to in by_language(cfg.report_recipients, cfg.mail.language).items():
        subject, body = TEMPLATES.render("monthly_report", context, lang)
        pdf = (f"aipool-usage-{name}-{lang}.pdf", to_pdf(rep, lang, brand), "application/pdf")
        mails.append(Mail(to, subject, body, (pdf,)))
    return mails
