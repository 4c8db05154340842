"""Quota watch and alerts by e-mail, once per episode.

An alert condition (a tenant past its warning threshold, a user past a quota, a pool with no
free cards) opens an *episode* when it starts to hold, and the mail goes out then; while it
keeps holding nothing more is sent; when it stops holding the episode closes, and the next
time it holds is a new episode with a new mail. Episodes live in ``acct_alert_episodes``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate
from sqlalchemy import Connection, Engine, select, update

from accounting.export import Brand
from accounting.models import AlertEpisode
from accounting.report import Dim, build, month_start, next_month
from slurm_plugins.client.models import Node
from slurm_plugins.common.mail import (
    Mail,
    MailConfig,
    Mailer,
    MailError,
    MailSchema,
    MailTemplates,
    SmtpSettings,
    by_language,
    mail_config,
)
from slurm_plugins.validation import flatten
from translations import DEFAULT, LOCALES

KINDS = ("tenant_budget", "user_quota", "pool_exhausted")
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


class _Config(MailSchema):
    """The mail part (``smtp``, ``user_email``, ``emails``, which the daemons' notices read
    from the same file) and the alerts'."""

    platform_admins = fields.List(fields.Email(), load_default=list)
    tenants = fields.Dict(keys=fields.String(), values=fields.Nested(_Budget), load_default=dict)
    users = fields.Nested(_Users, load_default=lambda: _Users().load({}))
    pools = fields.Boolean(load_default=True)
    monthly_report = fields.Nested(_Report, load_default=lambda: _Report().load({}))


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
    try:
        c = _Config().load(dict(raw))
    except ValidationError as exc:
        raise AlertConfigError(f"alert configuration: {'; '.join(flatten(exc.messages))}") from exc
    try:
        mail = mail_config(c)
    except MailError as exc:
        raise AlertConfigError(f"alert configuration: {exc}") from exc
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


# ---------------------------------------------------------------------- conditions
@dataclass(frozen=True, slots=True)
class Condition:
    """An alert condition that holds now; ``languages`` are the recipients' (in their
    order), each language gets its own mail."""

    kind: str
    subject: str
    recipients: tuple[str, ...]
    context: Mapping[str, Any]
    languages: tuple[str, ...] = ()

    def by_language(self) -> dict[str, tuple[str, ...]]:
        langs = dict(zip(self.recipients, self.languages, strict=False))
        return by_language(self.recipients, lambda a: langs.get(a, DEFAULT))


def _to(cfg: AlertConfig, kind: str, subject: str, to: Sequence[str], ctx: Any) -> Condition:
    """A condition for addresses, each in its reader's language."""
    langs = tuple(cfg.mail.language(a) for a in to)
    return Condition(kind, subject, tuple(to), ctx, langs)


def quota_conditions(conn: Connection, cfg: AlertConfig, now: datetime) -> list[Condition]:
    """Tenants past their warning threshold and users past their quota, this month."""
    start, end = month_start(now), next_month(now)
    month = start.strftime("%Y-%m")
    out: list[Condition] = []
    if cfg.tenants:
        used = {
            ln.key: (ln.card_hours, dim)
            for dim in (Dim.DOMAIN, Dim.PROJECT)
            for ln in build(conn, start, end, dim).lines
        }
        for tenant, b in sorted(cfg.tenants.items()):
            hours, dim = used.get(tenant, (Decimal(0), Dim.PROJECT))
            if hours >= b.card_hours * b.warn_at and b.recipients:
                ctx = {
                    "tenant": tenant,
                    "level": "domain" if dim is Dim.DOMAIN else "project",
                    "used": hours,
                    "budget": b.card_hours,
                    "share": hours / b.card_hours,
                    "threshold": b.warn_at,
                    "month": start,
                }
                out.append(_to(cfg, "tenant_budget", f"{tenant}@{month}", b.recipients, ctx))
    if cfg.user_card_hours or cfg.default_user_card_hours is not None:
        for ln in build(conn, start, end, Dim.USER).lines:
            quota = cfg.user_card_hours.get(ln.key, cfg.default_user_card_hours)
            if not quota or ln.card_hours < quota * cfg.user_warn_at:
                continue
            ctx = {
                "user": ln.key,
                "used": ln.card_hours,
                "budget": quota,
                "share": ln.card_hours / quota,
                "month": start,
            }
            out.append(
                Condition(
                    "user_quota",
                    f"{ln.key}@{month}",
                    (cfg.address(ln.key),),
                    ctx,
                    (cfg.mail.user_language(ln.key),),
                )
            )
    return out


def pool_conditions(
    nodes: Iterable[Node], cfg: AlertConfig, pending: Mapping[str, int] | None = None
) -> list[Condition]:
    """Pools (partitions) where no whole GPU or NPU is free; a card with any shard taken is
    not free."""
    if not cfg.pools or not cfg.platform_admins:
        return []
    totals: dict[tuple[str, str], list[int]] = {}
    for n in nodes:
        if not n.available:
            continue
        gpus = n.gres_total("gpu")
        spg = (n.gres_total("shard") // gpus) if gpus else 0
        shard_cards = math.ceil(n.gres_in_use("shard") / spg) if spg else 0
        for p in n.partitions:
            for kind, total, used in (
                ("GPU", gpus, n.gres_in_use("gpu") + shard_cards),
                ("NPU", n.gres_total("npu"), n.gres_in_use("npu")),
            ):
                if total:
                    acc = totals.setdefault((p, kind), [0, 0])
                    acc[0] += total
                    acc[1] += min(used, total)
    out = []
    for (pool, kind), (total, used) in sorted(totals.items()):
        if used >= total:
            ctx = {
                "pool": pool,
                "kind": kind,
                "used": used,
                "total": total,
                "pending": (pending or {}).get(pool, 0),
            }
            out.append(_to(cfg, "pool_exhausted", f"{pool}/{kind}", cfg.platform_admins, ctx))
    return out


# ---------------------------------------------------------------------- episodes
def process(
    engine: Engine,
    mailer: Mailer,
    holding: Sequence[Condition],
    now: datetime,
    kinds: Iterable[str] = KINDS,
    *,
    site: str = "AIPool",
) -> list[Mail]:
    """Open episodes (and mail, one per language of the recipients) for new conditions,
    close those of ``kinds`` that stopped holding. One transaction: a failed send leaves the
    episodes unopened, to try again."""
    kinds = tuple(kinds)
    sent: list[Mail] = []
    with engine.begin() as conn:
        rows = conn.execute(
            select(AlertEpisode.id, AlertEpisode.kind, AlertEpisode.subject).where(
                AlertEpisode.closed_at.is_(None), AlertEpisode.kind.in_(kinds)
            )
        ).all()
        open_ = {(r.kind, r.subject): r.id for r in rows}
        now_holding = {(c.kind, c.subject) for c in holding}
        ended = [i for key, i in open_.items() if key not in now_holding]
        if ended:
            conn.execute(
                update(AlertEpisode).where(AlertEpisode.id.in_(ended)).values(closed_at=now)
            )
        for c in holding:
            if (c.kind, c.subject) in open_:
                continue
            for lang, to in c.by_language().items():
                context = {**c.context, "site": site}
                sent.append(Mail(to, *TEMPLATES.render(c.kind, context, lang)))
            conn.execute(
                AlertEpisode.__table__.insert().values(  # type: ignore[attr-defined]
                    kind=c.kind,
                    subject=c.subject,
                    opened_at=now,
                    recipients=",".join(c.recipients)[:1024],
                )
            )
        mailer.send(sent)
    return sent


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
    readers = _to(cfg, "monthly_report", name, cfg.report_recipients, {})
    for lang, to in readers.by_language().items():
        subject, body = TEMPLATES.render("monthly_report", context, lang)
        pdf = (f"aipool-usage-{name}-{lang}.pdf", to_pdf(rep, lang, brand), "application/pdf")
        mails.append(Mail(to, subject, body, (pdf,)))
    return mails
