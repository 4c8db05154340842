"""Who may read and write a dataset, judged on the object (the rules: portal.datasets.service).

Apart from the service so that the directories' ACLs (portal.datasets.unix) follow the same
rule without importing the service that sets them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from flask import current_app, has_app_context
from sqlalchemy import ColumnElement, and_, exists, false, or_

from portal.authz import Access, Perm
from portal.datasets.models import Dataset, DatasetShare, GranteeKind, Visibility
from portal.models import utcnow


def now() -> datetime:
    """The time shares are judged at: the app's ``CLOCK`` where it has one (tests)."""
    clock: Callable[[], datetime] | None = (
        current_app.config.get("CLOCK") if has_app_context() else None
    )
    return clock() if clock else utcnow()


def can(access: Access, ds: Dataset) -> tuple[bool, bool]:
    """(read, write) of the caller on ``ds``; a share gives read access until it expires."""
    if access.platform_admin or ds.owner_id == access.user_id:
        return True, True
    on_project = access.on_project(ds.project)
    write = ds.visibility != Visibility.PRIVATE and Perm.PROJECT_MANAGE in on_project
    read = (
        write
        or ds.visibility == Visibility.PUBLIC
        or (ds.visibility == Visibility.PROJECT and bool(on_project))
        or any(applies(access, s, now()) for s in ds.shares)
    )
    return read, write


def applies(access: Access, share: DatasetShare, at: datetime) -> bool:
    """Whether ``share`` lets the caller read, at ``at``: to the user named, the members of
    the project named, everyone in the domain named."""
    if share.expires_at is not None and share.expires_at <= at:
        return False
    if share.grantee_kind == GranteeKind.USER:
        return share.grantee_id == access.user_id
    if share.grantee_kind == GranteeKind.PROJECT:
        return share.grantee_id in access.grants
    return share.grantee_id in (access.member_domains | access.admin_of)


def shared_filter(access: Access, at: datetime) -> ColumnElement[bool]:
    """SQL condition on :class:`Dataset`: a share lets the caller read it (as :func:`applies`)."""
    domains = access.member_domains | access.admin_of
    return exists().where(
        DatasetShare.dataset_id == Dataset.id,
        or_(DatasetShare.expires_at.is_(None), DatasetShare.expires_at > at),
        or_(
            and_(
                DatasetShare.grantee_kind == GranteeKind.USER.value,
                DatasetShare.grantee_id == access.user_id,
            ),
            and_(
                DatasetShare.grantee_kind == GranteeKind.PROJECT.value,
                DatasetShare.grantee_id.in_(list(access.grants)),
            )
            if access.grants
            else false(),
            and_(
                DatasetShare.grantee_kind == GranteeKind.DOMAIN.value,
                DatasetShare.grantee_id.in_(list(domains)),
            )
            if domains
            else false(),
        ),
    )
