"""Alert rules and channels as data: what they are, and their validation (marshmallow).

A rule names a query (``usage``: card-hours, card-hours against a budget, free cards of a
pool, a billing account's money left; ``metric``: a PromQL instant query), a comparator and
threshold, how long the condition must hold (``for``), a scope (platform, domain, project,
user), a severity and the channels it speaks through. A channel is e-mail (addresses and
roles) or a webhook: generic JSON, WeCom, DingTalk or Feishu robots. The same schemas read
the YAML file and the portal's API.

Error messages are marked English sentences (msgids): the portal shows them in its reader's
language, the command line in the site's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from marshmallow import (
    RAISE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from translations import N_, Message, translate


class Level(StrEnum):
    PLATFORM = "platform"
    DOMAIN = "domain"
    PROJECT = "project"
    USER = "user"


class Severity(StrEnum):
    NORMAL = "normal"
    URGENT = "urgent"


class ChannelType(StrEnum):
    EMAIL = "email"
    WEBHOOK = "webhook"
    WECOM = "wecom"
    DINGTALK = "dingtalk"
    FEISHU = "feishu"


#: usage measures: this month's card-hours, their share of a budget, a pool's free cards, a
#: billing account's money left (its balance less this month's charges so far)
MEASURES = ("card_hours", "card_hours_share", "pool_free_cards", "balance_left")
COMPARATORS = {
    ">": float.__gt__,
    ">=": float.__ge__,
    "<": float.__lt__,
    "<=": float.__le__,
    "==": float.__eq__,
    "!=": float.__ne__,
}
#: e-mail roles: the subject itself (a user-level rule's user), the platform's admins
ROLES = ("subject", "platform_admins")
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:@*-]{0,63}$")
_DURATION = re.compile(r"^(\d+)\s*([smhd]?)$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class AlertRuleError(ValueError):
    """Rules or channels that do not validate: ``errors`` by field path, each a msgid or
    marshmallow's own message."""

    def __init__(self, errors: Mapping[str, Any]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(lines(errors)))


def lines(errors: Mapping[str, Any], locale: str | None = None, path: str = "") -> list[str]:
    """``field.path: message`` per error, each message in ``locale``."""
    out: list[str] = []
    for key in sorted(errors, key=str):
        sub = path if key == "_schema" else f"{path}.{key}" if path else str(key)
        value = errors[key]
        if isinstance(value, Mapping):
            out += lines(value, locale, sub)
        else:
            for m in value if isinstance(value, list | tuple) else [value]:
                if isinstance(m, Mapping):
                    out += lines(m, locale, sub)
                else:
                    out.append(f"{sub}: {translate(locale, m)}" if sub else translate(locale, m))
    return out


# ---------------------------------------------------------------------- the data
@dataclass(frozen=True, slots=True)
class Scope:
    level: Level = Level.PLATFORM
    #: one domain, project (by its Slurm account) or user; empty: every one of the level
    name: str = ""


@dataclass(frozen=True, slots=True)
class Query:
    kind: str  # usage | metric
    measure: str = ""
    #: card-hours a subject may use this month (``card_hours_share``); ``budgets`` per subject
    budget: float | None = None
    budgets: Mapping[str, float] = field(default_factory=dict)
    cards: str = "GPU"  # pool_free_cards: GPU or NPU
    promql: str = ""
    #: the series label that names the subject of a metric rule
    subject_label: str = "instance"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    query: Query
    comparator: str
    threshold: float
    channels: tuple[str, ...]
    for_s: int = 0
    scope: Scope = Scope()
    severity: Severity = Severity.NORMAL
    #: the e-mail template of a firing message (the alert kinds that came before rules)
    template: str = ""

    def holds(self, value: float) -> bool:
        return bool(COMPARATORS[self.comparator](float(value), float(self.threshold)))


@dataclass(frozen=True, slots=True)
class Channel:
    name: str
    type: ChannelType
    recipients: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    url: str = field(default="", repr=False)
    secret: str = field(default="", repr=False)
    #: text or markdown (WeCom, DingTalk)
    format: str = "text"
    #: a platform channel that also carries every urgent rule
    urgent: bool = False


def masked(value: str) -> str:
    """A secret as pages show it: its first characters and the length of the rest hidden."""
    if not value:
        return ""
    keep = min(12, len(value) // 4)
    return value[:keep] + "…" + "•" * 6


# ---------------------------------------------------------------------- schemas
class _Strict(Schema):
    class Meta:
        unknown = RAISE


class Duration(fields.Field[int]):
    """Seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``10m``)."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> int:
        m = _DURATION.match(str(value).strip()) if not isinstance(value, bool) else None
        if m is None:
            raise ValidationError(N_("Give a duration such as 90, 30s, 10m or 2h."))
        seconds = int(m.group(1)) * _UNIT[m.group(2)]
        if seconds > 30 * 86400:
            raise ValidationError(N_("A duration may be 30 days at most."))
        return seconds

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        return value


def _name() -> fields.String:
    return fields.String(
        required=True,
        validate=validate.Regexp(
            NAME,
            error=N_(
                "A name starts with a letter; then letters, digits and _ . : @ * - (64 at most)."
            ),
        ),
    )


class ScopeSchema(_Strict):
    level = fields.String(
        load_default="platform", validate=validate.OneOf([x.value for x in Level])
    )
    name = fields.String(load_default="", validate=validate.Length(max=64))

    @validates_schema
    def _named(self, data: Mapping[str, Any], **_: Any) -> None:
        if data.get("level") == Level.PLATFORM and data.get("name"):
            raise ValidationError(N_("A platform scope names no tenant."), "name")


class QuerySchema(_Strict):
    kind = fields.String(required=True, validate=validate.OneOf(["usage", "metric"]))
    measure = fields.String(validate=validate.OneOf(MEASURES))
    budget = fields.Float(validate=validate.Range(min=0, min_inclusive=False))
    budgets = fields.Dict(
        keys=fields.String(validate=validate.Length(1, 64)),
        values=fields.Float(validate=validate.Range(min=0, min_inclusive=False)),
    )
    cards = fields.String(validate=validate.OneOf(["GPU", "NPU"]))
    promql = fields.String(validate=validate.Length(1, 2000))
    subject_label = fields.String(validate=validate.Length(1, 64))

    @validates_schema
    def _shape(self, data: Mapping[str, Any], **_: Any) -> None:
        if data["kind"] == "metric":
            if not data.get("promql"):
                raise ValidationError(N_("A metric query needs its PromQL."), "promql")
            for extra in ("measure", "budget", "budgets", "cards"):
                if extra in data:
                    raise ValidationError(N_("Only usage queries take this."), extra)
            return
        if not data.get("measure"):
            raise ValidationError(N_("A usage query needs its measure."), "measure")
        for extra in ("promql", "subject_label"):
            if extra in data:
                raise ValidationError(N_("Only metric queries take this."), extra)
        if data["measure"] == "card_hours_share" and not (
            data.get("budget") or data.get("budgets")
        ):
            raise ValidationError(N_("A share of card-hours needs a budget."), "budget")


class RuleSchema(_Strict):
    name = _name()
    query = fields.Nested(QuerySchema, required=True)
    comparator = fields.String(required=True, validate=validate.OneOf(list(COMPARATORS)))
    threshold = fields.Float(required=True, allow_nan=False)
    for_s = Duration(data_key="for", load_default=0)
    scope = fields.Nested(ScopeSchema, load_default=lambda: {"level": "platform", "name": ""})
    severity = fields.String(
        load_default="normal", validate=validate.OneOf([s.value for s in Severity])
    )
    channels = fields.List(
        fields.String(validate=validate.Length(1, 64)),
        required=True,
        validate=validate.Length(min=1, error=N_("A rule needs at least one channel.")),
    )

    @validates_schema
    def _fits(self, data: Mapping[str, Any], **_: Any) -> None:
        query, scope = data.get("query") or {}, data.get("scope") or {}
        level = scope.get("level", "platform")
        if query.get("measure") == "pool_free_cards" and level != Level.PLATFORM:
            raise ValidationError(
                N_("Pools belong to the platform: use a platform scope."), "scope"
            )
        if query.get("kind") == "metric" and level != Level.PLATFORM:
            raise ValidationError(N_("Metric rules have the platform's scope."), "scope")
        if query.get("measure") == "balance_left" and level == Level.USER:
            raise ValidationError(
                N_("Money is kept per domain or project: choose one, or the platform."),
                "scope",
            )
        if query.get("measure", "").startswith("card_hours") and level == Level.PLATFORM:
            raise ValidationError(
                N_("Card-hours are counted per domain, project or user: choose one."), "scope"
            )

    @post_load
    def _make(self, data: dict[str, Any], **_: Any) -> Rule:
        q = data["query"]
        return Rule(
            name=data["name"],
            query=Query(
                kind=q["kind"],
                measure=q.get("measure", ""),
                budget=q.get("budget"),
                budgets=q.get("budgets", {}),
                cards=q.get("cards", "GPU"),
                promql=q.get("promql", ""),
                subject_label=q.get("subject_label", "instance"),
            ),
            comparator=data["comparator"],
            threshold=data["threshold"],
            channels=tuple(data["channels"]),
            for_s=data["for_s"],
            scope=Scope(Level(data["scope"]["level"]), data["scope"]["name"]),
            severity=Severity(data["severity"]),
        )


_WEBHOOKS = {ChannelType.WEBHOOK, ChannelType.WECOM, ChannelType.DINGTALK, ChannelType.FEISHU}


class ChannelSchema(_Strict):
    name = _name()
    type = fields.String(required=True, validate=validate.OneOf([t.value for t in ChannelType]))
    recipients = fields.List(fields.Email(), load_default=list)
    roles = fields.List(fields.String(validate=validate.OneOf(ROLES)), load_default=list)
    url = fields.Url(schemes={"http", "https"}, require_tld=False)
    secret = fields.String(validate=validate.Length(1, 256))
    format = fields.String(load_default="text", validate=validate.OneOf(["text", "markdown"]))
    urgent = fields.Boolean(load_default=False)

    @validates_schema
    def _shape(self, data: Mapping[str, Any], **_: Any) -> None:
        kind = data.get("type")
        if kind == ChannelType.EMAIL:
            if not (data.get("recipients") or data.get("roles")):
                raise ValidationError(
                    N_("An e-mail channel needs recipients or roles."), "recipients"
                )
            if "url" in data or "secret" in data:
                raise ValidationError(N_("E-mail channels take no URL or secret."), "url")
            return
        if not data.get("url"):
            raise ValidationError(N_("A webhook channel needs its URL."), "url")
        if data.get("recipients") or data.get("roles"):
            raise ValidationError(N_("Only e-mail channels take recipients."), "recipients")
        if "secret" in data and kind not in (ChannelType.DINGTALK, ChannelType.FEISHU):
            raise ValidationError(
                N_("Only DingTalk and Feishu robots sign with a secret."), "secret"
            )

    @post_load
    def _make(self, data: dict[str, Any], **_: Any) -> Channel:
        return Channel(
            name=data["name"],
            type=ChannelType(data["type"]),
            recipients=tuple(data["recipients"]),
            roles=tuple(data["roles"]),
            url=data.get("url", ""),
            secret=data.get("secret", ""),
            format=data["format"],
            urgent=data["urgent"],
        )


def load_rule(raw: Mapping[str, Any]) -> Rule:
    try:
        rule: Rule = RuleSchema().load(dict(raw))
    except ValidationError as exc:
        raise AlertRuleError(_errors(exc)) from exc
    return rule


def load_channel(raw: Mapping[str, Any]) -> Channel:
    try:
        channel: Channel = ChannelSchema().load(dict(raw))
    except ValidationError as exc:
        raise AlertRuleError(_errors(exc)) from exc
    return channel


def _errors(exc: ValidationError) -> dict[str, Any]:
    messages = exc.messages
    return dict(messages) if isinstance(messages, dict) else {"_schema": messages}


def check_references(rules: Sequence[Rule], channels: Sequence[Channel]) -> None:
    """Names unique; every channel a rule names exists."""
    errors: dict[str, list[Any]] = {}
    known = {c.name for c in channels}
    for what, names in (("rules", [r.name for r in rules]), ("channels", list(known))):
        if len(set(names)) != len(names) or (what == "channels" and len(known) != len(channels)):
            errors.setdefault(what, []).append(N_("Each name may be used once."))
    for i, r in enumerate(rules):
        if missing := [c for c in r.channels if c not in known]:
            errors[f"rules.{i}.channels"] = [
                Message.of(N_("There is no channel named %(name)s."), name=m) for m in missing
            ]
    if errors:
        raise AlertRuleError(errors)
