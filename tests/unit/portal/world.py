"""The tenants every portal unit test starts from: the demo tenants plus a domain admin per
domain, a viewer, a group member and a user with a custom role."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from portal.demo import DEMO_USERS, seed
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token, hash_password
from portal.roles.models import Role
from portal.roles.service import role_by_name
from portal.tenancy.models import (
    Domain,
    DomainAdmin,
    Group,
    GroupGrant,
    GroupMember,
    Membership,
    Project,
)

PASSWORD = "correct horse battery"
EXTRA = ("erin", "tina", "victor", "gina", "sam", "nobody")


@dataclass
class World:
    users: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    domains: dict[str, int] = field(default_factory=dict)
    projects: dict[str, int] = field(default_factory=dict)
    roles: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)


def seed_world() -> World:
    s = db.session
    seed(s, dict.fromkeys(DEMO_USERS, PASSWORD))
    same_hash = hash_password(PASSWORD)
    for name in EXTRA:
        s.add(User(username=name, display_name=name.capitalize(), password_hash=same_hash))
    s.flush()
    w = World()
    w.users = {u.username: u.id for u in s.scalars(select(User))}
    w.domains = {d.name: d.id for d in s.scalars(select(Domain))}
    w.projects = {p.name: p.id for p in s.scalars(select(Project))}
    submitter = Role(name="submitter", description="submits only", permissions=["jobs.submit"])
    s.add(submitter)
    s.add(DomainAdmin(domain_id=w.domains["research"], user_id=w.users["erin"]))
    s.add(DomainAdmin(domain_id=w.domains["teaching"], user_id=w.users["tina"]))
    s.add(
        Membership(
            project_id=w.projects["vision"],
            user_id=w.users["victor"],
            role_id=role_by_name(s, "viewer").id,
        )
    )
    s.flush()
    s.add(Membership(project_id=w.projects["nlp"], user_id=w.users["sam"], role_id=submitter.id))
    group = Group(domain_id=w.domains["research"], name="nlp-readers")
    s.add(group)
    s.flush()
    s.add(GroupMember(group_id=group.id, user_id=w.users["gina"]))
    s.add(
        GroupGrant(
            group_id=group.id, project_id=w.projects["nlp"], role_id=role_by_name(s, "viewer").id
        )
    )
    s.commit()
    w.roles = {r.name: r.id for r in s.scalars(select(Role))}
    w.groups = {"nlp-readers": group.id}
    for name, uid in w.users.items():
        user = s.get(User, uid)
        assert user is not None
        w.tokens[name] = create_token(s, user, "tests", days=None)[1]
    return w
