"""Shares of datasets: read access for a user, the members of a project or a whole domain (a
tenant), until an expiry day or until withdrawn. Writers of a dataset share it.

A share counts in every permission check at the moment of the check
(:func:`portal.datasets.access.can`), so the portal stops showing a dataset the instant its
share expires. On disk the dataset's directory lets its readers in by a POSIX ACL
(:mod:`portal.datasets.unix`), which is recomputed whenever a share is made or removed; the
portal's control daemon removes expired shares (:func:`expire`), which takes their holders off
the ACL within one of its passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access
from portal.datasets.access import now
from portal.datasets.models import Dataset, DatasetShare
from portal.datasets.service import get_dataset
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import User
from portal.sharing import GranteeKind
from portal.tenancy.models import Domain, Project
from translations import N_

NO_NAME = {
    GranteeKind.USER: N_("There is no active user named %(name)s."),
    GranteeKind.PROJECT: N_("There is no project named %(name)s."),
    GranteeKind.DOMAIN: N_("There is no domain named %(name)s."),
}


def grantee_id(session: Session, kind: str, name: str) -> int:
    """The id of the active user, the project or the domain named ``name`` (a message on the
    ``grantee`` field when there is none)."""
    grantee = GranteeKind(kind)
    if grantee == GranteeKind.USER:
        found = session.scalar(select(User.id).where(User.username == name, User.active))
    elif grantee == GranteeKind.PROJECT:
        found = session.scalar(select(Project.id).where(Project.name == name))
    else:
        found = session.scalar(select(Domain.id).where(Domain.name == name))
    if found is None:
        raise ValidationFailed({"grantee": [gettext(NO_NAME[grantee], name=name)]})
    return int(found)


def grantee_name(session: Session, kind: str, ident: int) -> str | None:
    """The name of a share's user, project or domain (``None`` once it is gone)."""
    if GranteeKind(kind) == GranteeKind.USER:
        user = session.get(User, ident)
        return user.username if user is not None else None
    tenant = session.get(Project if kind == GranteeKind.PROJECT else Domain, ident)
    return str(getattr(tenant, "name", "")) if tenant is not None else None


def shares(session: Session, access: Access, dataset_id: int) -> list[DatasetShare]:
    ds = get_dataset(session, access, dataset_id, write=True)
    return sorted(ds.shares, key=lambda s: s.id)


def share(
    session: Session, access: Access, dataset_id: int, data: Mapping[str, Any]
) -> DatasetShare:
    """Share (or change the expiry of the share) with ``grantee_kind``/``grantee_id``."""
    ds = get_dataset(session, access, dataset_id, write=True)
    kind, ident = GranteeKind(data["grantee_kind"]), int(data["grantee_id"])
    if grantee_name(session, kind, ident) is None:
        raise ValidationFailed(
            {"grantee_id": [gettext("There is no such user, project or domain.")]}
        )
    expires: datetime | None = data.get("expires_at")
    if expires is not None and expires <= now():
        message = gettext("The expiry must be in the future (or left out: no expiry).")
        raise ValidationFailed({"expires_at": [message]})
    row = next((s for s in ds.shares if (s.grantee_kind, s.grantee_id) == (kind, ident)), None)
    if row is None:
        row = DatasetShare(grantee_kind=kind.value, grantee_id=ident, created_by_id=access.user_id)
        ds.shares.append(row)
    row.expires_at = expires
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict(gettext("The share changed meanwhile. Try again.")) from None
    _audit(session, access, "dataset.share", ds, after=row.audit_view())
    session.commit()
    return row


def unshare(session: Session, access: Access, dataset_id: int, share_id: int) -> None:
    ds = get_dataset(session, access, dataset_id, write=True)
    row = next((s for s in ds.shares if s.id == share_id), None)
    if row is None:
        raise NotFound(gettext("Share not found."))
    _audit(session, access, "dataset.unshare", ds, before=row.audit_view())
    ds.shares.remove(row)
    session.commit()


def expire(session: Session, at: datetime, *, dry_run: bool = False) -> list[str]:
    """Remove the shares expired by ``at`` (the control daemon's pass): the commit takes their
    holders off the datasets' ACLs. One line per share."""
    rows = list(
        session.scalars(
            select(DatasetShare)
            .where(DatasetShare.expires_at.is_not(None), DatasetShare.expires_at <= at)
            .order_by(DatasetShare.id)
        )
    )
    lines = [
        f"dataset {r.dataset_id}: share with {r.grantee_kind} {r.grantee_id} expired" for r in rows
    ]
    if dry_run or not rows:
        return [f"would {line}" for line in lines] if dry_run else lines
    for row in rows:
        session.delete(row)
    session.commit()
    return lines


def _audit(session: Session, access: Access, action: str, ds: Dataset, **kw: Any) -> None:
    record(session, access.user, action, "dataset", ds.id, domain_id=ds.project.domain_id, **kw)
