"""Who may read and write a dataset, judged on the object (the rules: portal.datasets.service).

Apart from the service so that the directories' ACLs (portal.datasets.unix) follow the same
rule without importing the service that sets them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, exists

from portal.authz import Access, Perm
from portal.datasets.models import Dataset, DatasetShare, Visibility
from portal.sharing import now, reach_filter, reaches

__all__ = ["applies", "can", "now", "shared_filter"]


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
    """Whether ``share`` lets the caller read, at ``at`` (:func:`portal.sharing.reaches`)."""
    return reaches(access, share.grantee_kind, share.grantee_id, share.expires_at, at)


def shared_filter(access: Access, at: datetime) -> ColumnElement[bool]:
    """SQL condition on :class:`Dataset`: a share lets the caller read it (as :func:`applies`)."""
    return exists().where(
        DatasetShare.dataset_id == Dataset.id,
        reach_filter(
            access, at, DatasetShare.grantee_kind, DatasetShare.grantee_id, DatasetShare.expires_at
        ),
    )
