"""The one rule of shares, for every resource that can be shared (datasets, models): who a
share reaches, and until when.

A share names a user, a project or a domain (another tenant) and may expire. It reaches
- the user it names;
- everyone who may see the project it names (``project.read`` there, through a role of theirs
  or of a group of theirs): a role without it (a site's annotator-only role, say) does not
  open the project's shared resources;
- everyone in the domain it names: its projects' members and its admins;
and nobody from the instant it expires. What a share then allows (read, or read and write)
is the resource's own business. :func:`reaches` judges one share in Python (pages, ACLs);
:func:`reach_filter` is the same rule in SQL (lists). Both are judged at :func:`now`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, and_, delete, event, false, or_
from sqlalchemy.orm import Mapper
from sqlalchemy.sql.elements import SQLCoreOperations

from portal.authz import Access, Perm
from portal.clock import now
from portal.identity.models import User
from portal.tenancy.models import Domain, Project

__all__ = [
    "GranteeKind",
    "domains",
    "now",
    "reach_filter",
    "reaches",
    "seen_projects",
    "share_table",
]

T = TypeVar("T")


class GranteeKind(StrEnum):
    USER = "user"
    PROJECT = "project"
    DOMAIN = "domain"  # another tenant


def seen_projects(access: Access) -> frozenset[int]:
    """The projects whose shares reach the caller: those they may see."""
    return frozenset(p for p, perms in access.grants.items() if Perm.PROJECT_READ in perms)


def domains(access: Access) -> frozenset[int]:
    """The domains whose shares reach the caller: those they are in or administer."""
    return access.member_domains | access.admin_of


def reaches(
    access: Access, kind: str, grantee_id: int, expires_at: datetime | None, at: datetime
) -> bool:
    """Whether a share to (``kind``, ``grantee_id``) reaches the caller at ``at``."""
    if expires_at is not None and expires_at <= at:
        return False
    if kind == GranteeKind.USER:
        return grantee_id == access.user_id
    if kind == GranteeKind.PROJECT:
        return grantee_id in seen_projects(access)
    if kind == GranteeKind.DOMAIN:
        return grantee_id in domains(access)
    return False


def reach_filter(
    access: Access,
    at: datetime,
    kind: SQLCoreOperations[str],
    grantee_id: SQLCoreOperations[int],
    expires_at: SQLCoreOperations[datetime | None],
) -> ColumnElement[bool]:
    """:func:`reaches` as an SQL condition on a share table's three columns."""
    projects, tenants = sorted(seen_projects(access)), sorted(domains(access))
    return and_(
        or_(expires_at.is_(None), expires_at > at),
        or_(
            and_(kind == GranteeKind.USER.value, grantee_id == access.user_id),
            and_(kind == GranteeKind.PROJECT.value, grantee_id.in_(projects))
            if projects
            else false(),
            and_(kind == GranteeKind.DOMAIN.value, grantee_id.in_(tenants)) if tenants else false(),
        ),
    )


# ---------------------------------------------------------------------- grantees that go
#: each resource's share table (its model: ``grantee_kind``, ``grantee_id``), as registered
SHARE_TABLES: list[Any] = []


def share_table(model: type[T]) -> type[T]:
    """Register a resource's share model: its shares go with the user, project or domain
    they name, so a later one that gets the same id (SQLite reuses a deleted row's) gets
    nothing of them."""
    SHARE_TABLES.append(model)
    return model


def _forget(kind: GranteeKind) -> Any:
    def gone(_mapper: Mapper[Any], connection: Connection, target: Any) -> None:
        for model in SHARE_TABLES:
            connection.execute(
                delete(model).where(model.grantee_kind == kind.value, model.grantee_id == target.id)
            )

    return gone


event.listen(User, "after_delete", _forget(GranteeKind.USER))
event.listen(Project, "after_delete", _forget(GranteeKind.PROJECT))
event.listen(Domain, "after_delete", _forget(GranteeKind.DOMAIN))
