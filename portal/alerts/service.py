"""Alert rules and channels in the portal: who may see and change which, checked here.

* platform admins: every scope, metric rules, channels marked urgent;
* domain admins: rules and channels scoped to their domains or to their domains' projects;
* project admins (``project.manage``): those scoped to their projects;
* anyone else: nothing (an empty list; a named rule they cannot see is not found).

States and deliveries carry the tenant they are about; a tenant admin sees those of their
own tenants only. A channel's URL and secret are credentials: they are masked in every
answer and never logged. Every change is audited (without the credentials).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flask import current_app
from sqlalchemy import ColumnElement, and_, delete, false, or_, select
from sqlalchemy.orm import Session

from accounting.alert_models import AlertChannelRow, AlertDelivery, AlertRuleRow, AlertState
from accounting.alert_rules import (
    AlertRuleError,
    Channel,
    ChannelSchema,
    Level,
    Rule,
    RuleSchema,
    load_channel,
    load_rule,
    masked,
)
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext, ngettext
from portal.tenancy.models import Domain, Project
from portal.usage.plans import localised


class RuleDocument(RuleSchema):
    """A rule as the API takes it: validated, kept as its document."""

    def _make(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return data


class ChannelDocument(ChannelSchema):
    def _make(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return data


# ---------------------------------------------------------------------- scopes
def _tenants(session: Session, access: Access) -> tuple[set[str], set[str]]:
    """Names of the domains and projects whose alerts the caller manages."""
    domains = set(session.scalars(select(Domain.name).where(Domain.id.in_(access.admin_of))).all())
    projects = {
        p.name
        for p in session.scalars(select(Project).where(access.project_filter())).all()
        if Perm.PROJECT_MANAGE in access.on_project(p)
    }
    return domains, projects


def manages_alerts(session: Session, access: Access) -> bool:
    """Whether the caller administers any scope alerts can be set for (the page's guard)."""
    return access.platform_admin or any(_tenants(session, access))


def _may(session: Session, access: Access, level: str, name: str) -> bool:
    if access.platform_admin:
        return True
    if not name:
        return False
    domains, projects = _tenants(session, access)
    return (level == Level.DOMAIN and name in domains) or (
        level == Level.PROJECT and name in projects
    )


def _visible(session: Session, access: Access, table: Any) -> ColumnElement[bool]:
    """SQL condition on rows of a table with ``scope_level`` and ``scope_name``."""
    if access.platform_admin:
        return table.id.is_not(None)  # type: ignore[no-any-return]
    domains, projects = _tenants(session, access)
    conds = []
    if domains:
        conds.append(and_(table.scope_level == Level.DOMAIN, table.scope_name.in_(domains)))
    if projects:
        conds.append(and_(table.scope_level == Level.PROJECT, table.scope_name.in_(projects)))
    return or_(*conds) if conds else false()


def _refuse(session: Session, access: Access, level: str, name: str) -> None:
    if not _may(session, access, level, name):
        raise Forbidden(
            gettext("You may manage alerts only for the domains and projects you administer.")
        )


def _invalid(exc: AlertRuleError) -> ValidationFailed:
    return ValidationFailed(localised(flat_errors(exc.errors)))


def flat_errors(errors: Mapping[str, Any], path: str = "") -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for key, value in errors.items():
        sub = path if key == "_schema" else f"{path}.{key}" if path else str(key)
        if isinstance(value, Mapping):
            out |= flat_errors(value, sub)
        else:
            out.setdefault(sub or "_schema", []).extend(
                value if isinstance(value, list | tuple) else [value]
            )
    return out


# ---------------------------------------------------------------------- rules
def rules(session: Session, access: Access) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(AlertRuleRow)
        .where(_visible(session, access, AlertRuleRow))
        .order_by(AlertRuleRow.name)
    ).all()
    states = _states(session, [r.name for r in rows])
    return [_rule_out(r, states.get(r.name, [])) for r in rows]


def rule(session: Session, access: Access, name: str) -> dict[str, Any]:
    row = _rule_row(session, access, name)
    return _rule_out(row, _states(session, [name]).get(name, []))


def _rule_row(session: Session, access: Access, name: str) -> AlertRuleRow:
    row = session.scalar(
        select(AlertRuleRow).where(
            AlertRuleRow.name == name, _visible(session, access, AlertRuleRow)
        )
    )
    if row is None:
        raise NotFound(gettext("There is no alert rule named %(name)s.", name=name))
    return row


def save_rule(
    session: Session, access: Access, data: Mapping[str, Any], name: str | None = None
) -> dict[str, Any]:
    """Create a rule (``name`` None) or replace the rule ``name``."""
    document = RuleDocument().dump(data)
    try:
        new = load_rule(document)
    except AlertRuleError as exc:
        raise _invalid(exc) from exc
    _refuse(session, access, new.scope.level, new.scope.name)
    _check_channels(session, access, new)
    if name is None:
        if session.scalar(select(AlertRuleRow.id).where(AlertRuleRow.name == new.name)):
            raise Conflict(gettext("An alert rule named %(name)s exists.", name=new.name))
        row = AlertRuleRow(name=new.name, created_by=access.username)
        session.add(row)
        before = None
    else:
        row = _rule_row(session, access, name)
        if new.name != name:
            raise Conflict(gettext("A rule keeps its name; make a new rule for a new name."))
        before = dict(row.document)
    row.scope_level, row.scope_name = new.scope.level.value, new.scope.name
    row.document = document
    row.updated_at = datetime.now(UTC)
    record(
        session,
        access.user,
        "alert_rule.save",
        "alert_rule",
        new.name,
        before=before,
        after=document,
    )
    session.commit()
    return rule(session, access, new.name)


def _check_channels(session: Session, access: Access, new: Rule) -> None:
    known = set(
        session.scalars(
            select(AlertChannelRow.name).where(_visible(session, access, AlertChannelRow))
        ).all()
    )
    missing = [c for c in new.channels if c not in known]
    if missing:
        raise ValidationFailed(
            {"channels": [gettext("There is no channel named %(name)s.", name=m) for m in missing]}
        )


def delete_rule(session: Session, access: Access, name: str) -> None:
    row = _rule_row(session, access, name)
    _refuse(session, access, row.scope_level, row.scope_name)
    session.delete(row)
    session.execute(delete(AlertState).where(AlertState.rule == name))
    record(session, access.user, "alert_rule.delete", "alert_rule", name, before=row.document)
    session.commit()


def _states(session: Session, names: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    if not names:
        return out
    for s in session.scalars(
        select(AlertState).where(AlertState.rule.in_(names)).order_by(AlertState.subject)
    ):
        out.setdefault(s.rule, []).append(
            {"subject": s.subject, "state": s.state, "since": s.since, "value": s.value}
        )
    return out


def _rule_out(row: AlertRuleRow, states: list[dict[str, Any]]) -> dict[str, Any]:
    doc = dict(row.document)
    worst = (
        "firing" if any(s["state"] == "firing" for s in states) else ("pending" if states else "ok")
    )
    return {
        **doc,
        "state": worst,
        "subjects": states,
        "created_by": row.created_by,
        "updated_at": row.updated_at,
    }


# ---------------------------------------------------------------------- channels
def channels(session: Session, access: Access) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(AlertChannelRow)
        .where(_visible(session, access, AlertChannelRow))
        .order_by(AlertChannelRow.name)
    ).all()
    return [_channel_out(r) for r in rows]


def create_channel(session: Session, access: Access, data: Mapping[str, Any]) -> dict[str, Any]:
    scope = dict(data.get("scope") or {"level": "platform", "name": ""})
    body = {k: v for k, v in data.items() if k != "scope"}
    document = ChannelDocument().dump(body)
    try:
        channel = load_channel(document)
    except AlertRuleError as exc:
        raise _invalid(exc) from exc
    level, name = scope.get("level", "platform"), scope.get("name", "")
    _refuse(session, access, level, name)
    if channel.urgent and not access.platform_admin:
        raise Forbidden(gettext("Only platform admins may mark a channel urgent."))
    if channel.url and not access.platform_admin:
        _check_webhook_host(channel.url)
    if session.scalar(select(AlertChannelRow.id).where(AlertChannelRow.name == channel.name)):
        raise Conflict(gettext("A channel named %(name)s exists.", name=channel.name))
    row = AlertChannelRow(
        name=channel.name,
        scope_level=level,
        scope_name=name,
        document=document,
        created_by=access.username,
        updated_at=datetime.now(UTC),
    )
    session.add(row)
    record(
        session,
        access.user,
        "alert_channel.create",
        "alert_channel",
        channel.name,
        after=_shown(channel, level, name),
    )
    session.commit()
    return _channel_out(row)


def _check_webhook_host(url: str) -> None:
    """A tenant admin's webhook goes only to the site's allowed hosts: the scheduler posts
    from inside the site's network, so a free URL would let a tenant reach internal services."""
    host = (urlsplit(url).hostname or "").lower()
    allowed = [h.lower() for h in current_app.config.get("ALERT_WEBHOOK_HOSTS", [])]
    if host not in allowed:
        raise ValidationFailed(
            {
                "url": [
                    gettext(
                        "Webhooks may go only to these hosts: %(hosts)s. A platform admin may "
                        "add a channel to another host.",
                        hosts=", ".join(allowed) or "-",
                    )
                ]
            }
        )


def delete_channel(session: Session, access: Access, name: str) -> None:
    row = session.scalar(
        select(AlertChannelRow).where(
            AlertChannelRow.name == name, _visible(session, access, AlertChannelRow)
        )
    )
    if row is None:
        raise NotFound(gettext("There is no alert channel named %(name)s.", name=name))
    _refuse(session, access, row.scope_level, row.scope_name)
    users = [
        r
        for r in session.scalars(select(AlertRuleRow))
        if name in (r.document.get("channels") or [])  # type: ignore[operator]
    ]
    if users:
        # the rules the caller may see by name; others' counted, never named
        seen = set(
            session.scalars(select(AlertRuleRow.id).where(_visible(session, access, AlertRuleRow)))
        )
        named = [r.name for r in users if r.id in seen]
        hidden = len(users) - len(named)
        rules = ", ".join(named)
        if hidden:
            others = ngettext(
                "%(num)d rule of another scope", "%(num)d rules of other scopes", hidden
            )
            rules = (
                gettext("%(names)s and %(others)s", names=rules, others=others) if named else others
            )
        raise Conflict(
            gettext(
                "The channel %(name)s is in use by the rules %(rules)s.", name=name, rules=rules
            )
        )
    session.delete(row)
    record(session, access.user, "alert_channel.delete", "alert_channel", name)
    session.commit()


def _shown(channel: Channel, level: str, name: str) -> dict[str, Any]:
    """A channel as pages and the API show it: the URL and secret masked."""
    return {
        "name": channel.name,
        "type": channel.type.value,
        "scope": {"level": level, "name": name},
        "recipients": list(channel.recipients),
        "roles": list(channel.roles),
        "url": masked(channel.url),
        "secret": masked(channel.secret),
        "format": channel.format,
        "urgent": channel.urgent,
    }


def _channel_out(row: AlertChannelRow) -> dict[str, Any]:
    return _shown(load_channel(row.document), row.scope_level, row.scope_name)


# ---------------------------------------------------------------------- deliveries
def deliveries(session: Session, access: Access, limit: int = 100) -> list[AlertDelivery]:
    return list(
        session.scalars(
            select(AlertDelivery)
            .where(_visible(session, access, AlertDelivery))
            .order_by(AlertDelivery.id.desc())
            .limit(limit)
        ).all()
    )
