"""The one rule of shares (portal/sharing.py): whom a share to a user, a project or a domain
reaches and until when, the same in Python (pages, ACLs) and in SQL (lists), and the same for
datasets and models."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import (
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    insert,
    select,
)

from portal.authz import MEMBER, Access, Perm
from portal.datasets.access import applies as dataset_share_reaches
from portal.datasets.models import DatasetShare
from portal.identity.models import User
from portal.registry.access import _share_applies as model_share_reaches
from portal.registry.models import ModelShare
from portal.sharing import GranteeKind, reach_filter, reaches

AT = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
ME, OTHER = 7, 8
HOME, ELSEWHERE = 1, 2  # projects
MY_DOMAIN, OTHER_DOMAIN = 10, 11
EXPIRIES = (None, AT - timedelta(seconds=1), AT, AT + timedelta(days=1))

#: what the caller holds on project HOME: a member's role, a role that may only annotate
#: (no project.read), or nothing there
ROLES = {
    "member": MEMBER,
    "no project.read": frozenset({Perm.JOBS_SUBMIT}),
    "none": frozenset(),
}


def _access(role: str) -> Access:
    perms = ROLES[role]
    return Access(
        user=User(id=ME, username="alice"),
        grants={HOME: perms} if perms else {},
        member_domains=frozenset({MY_DOMAIN}) if perms else frozenset(),
    )


SHARES = [
    (kind, grantee, expires)
    for kind, grantee in [
        (GranteeKind.USER, ME),
        (GranteeKind.USER, OTHER),
        (GranteeKind.PROJECT, HOME),
        (GranteeKind.PROJECT, ELSEWHERE),
        (GranteeKind.DOMAIN, MY_DOMAIN),
        (GranteeKind.DOMAIN, OTHER_DOMAIN),
    ]
    for expires in EXPIRIES
]


def _expected(role: str, kind: GranteeKind, grantee: int, expires: datetime | None) -> bool:
    if expires is not None and expires <= AT:
        return False
    if kind is GranteeKind.USER:
        return grantee == ME
    if kind is GranteeKind.PROJECT:
        return grantee == HOME and Perm.PROJECT_READ in ROLES[role]
    return grantee == MY_DOMAIN and bool(ROLES[role])


@pytest.mark.parametrize("role", ROLES)
def test_a_share_reaches_whom_the_rule_says(role: str) -> None:
    access = _access(role)
    for kind, grantee, expires in SHARES:
        want = _expected(role, kind, grantee, expires)
        assert reaches(access, kind, grantee, expires, AT) is want, (kind, grantee, expires)


@pytest.mark.parametrize("role", ROLES)
def test_sql_and_python_agree_on_every_share(role: str) -> None:
    shares = Table(
        "shares",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("grantee_kind", String(16)),
        Column("grantee_id", Integer),
        Column("expires_at", DateTime(timezone=True)),
    )
    engine = create_engine("sqlite://")
    shares.metadata.create_all(engine)
    rows = [
        {"id": i, "grantee_kind": k.value, "grantee_id": g, "expires_at": e}
        for i, (k, g, e) in enumerate(SHARES)
    ]
    access = _access(role)
    with engine.begin() as db:
        db.execute(insert(shares), rows)
        cols = shares.c
        where = reach_filter(access, AT, cols.grantee_kind, cols.grantee_id, cols.expires_at)
        found = set(db.scalars(select(cols.id).where(where)))
    want = {i for i, share in enumerate(SHARES) if reaches(access, *share, AT)}
    assert found == want
    assert want, "the matrix has shares that reach the caller"


@pytest.mark.parametrize(("role", "share"), list(itertools.product(ROLES, SHARES)))
def test_datasets_and_models_follow_the_same_rule(
    role: str, share: tuple[GranteeKind, int, datetime | None]
) -> None:
    """A dataset's share reaches exactly whom a model's does (a model's project share once
    needed project.read, a dataset's any role there)."""
    kind, grantee, expires = share
    access = _access(role)
    on_dataset = DatasetShare(grantee_kind=kind.value, grantee_id=grantee, expires_at=expires)
    on_model = ModelShare(grantee_kind=kind.value, grantee_id=grantee, expires_at=expires)
    want = _expected(role, kind, grantee, expires)
    assert dataset_share_reaches(access, on_dataset, AT) is want
    assert model_share_reaches(access, on_model, AT) is want
