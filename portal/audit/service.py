"""Recording and searching the audit log; every service write calls :func:`record`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from portal.audit.models import AuditEvent
from portal.authz import Access
from portal.errors import Forbidden
from portal.i18n import gettext
from portal.identity.models import User


def record(
    session: Session,
    actor: User | None,
    action: str,
    target_type: str,
    target_id: object = "",
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    domain_id: int | None = None,
) -> AuditEvent:
    """Add an event to the caller's transaction: it commits (or rolls back) with the change."""
    event = AuditEvent(
        actor_id=actor.id if actor else None,
        actor=actor.username if actor else "system",
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        domain_id=domain_id,
        before=_plain(before),
        after=_plain(after),
    )
    session.add(event)
    return event


def _plain(view: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if view is None:
        return None
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in view.items()}


def search_query(access: Access, filters: Mapping[str, Any]) -> Select[AuditEvent]:
    """Events the caller may read, newest first: platform admins all, domain admins their
    domains' events."""
    stmt = select(AuditEvent).order_by(AuditEvent.id.desc())
    if not access.platform_admin:
        if not access.admin_of:
            raise Forbidden(gettext("The audit log is for platform admins and domain admins."))
        stmt = stmt.where(AuditEvent.domain_id.in_(access.admin_of))
    for name in ("actor", "action", "target_type", "target_id", "domain_id"):
        value = filters.get(name)
        if value is not None and value != "":
            stmt = stmt.where(getattr(AuditEvent, name) == value)
    if filters.get("target_ids") is not None:  # the objects a name filter found (maybe none)
        stmt = stmt.where(AuditEvent.target_id.in_(sorted(filters["target_ids"])))
    if filters.get("action_prefix"):
        stmt = stmt.where(AuditEvent.action.startswith(filters["action_prefix"]))
    if filters.get("since") is not None:
        stmt = stmt.where(AuditEvent.at >= filters["since"])
    if filters.get("until") is not None:
        stmt = stmt.where(AuditEvent.at < filters["until"])
    return stmt
