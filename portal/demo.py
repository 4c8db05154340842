"""Demo tenants matching the lab cluster (``aipool/lab/tenants.yaml``).

Domains ``teaching`` (project ``cs101``) and ``research`` (``nlp``, ``vision``); platform
admin ``admin``; ``alice`` in nlp (may use QOS high), ``bob`` in vision, ``carol`` (the
teacher: manager of cs101 and admin of the teaching domain) and ``dave`` in cs101. Billing:
the ``standard`` price plan, and a billing account with a first top-up for each project (nlp
with a monthly package).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from accounting.billing import top_up
from accounting.billing_models import BillingAccount, PricePlan
from accounting.plans import apply_plan, open_account
from portal.identity.models import User
from portal.identity.service import hash_password
from portal.roles.service import ensure_builtin, role_by_name
from portal.tenancy.models import Domain, DomainAdmin, Membership, Project
from portal.usage.plans import tenant_check

DEMO_USERS = ("admin", "alice", "bob", "carol", "dave")
DOMAINS = {"teaching": "Teaching domain", "research": "Research domain"}
PROJECTS = {
    # name: (domain, description, qos)
    "cs101": ("teaching", "Course CS101 lab sessions", "normal,low"),
    "nlp": ("research", "NLP group", "normal,low,high"),
    "vision": ("research", "Computer vision group", "normal,low"),
}
#: the demo's price plan (the lab has a100 GPUs, 910b NPUs and their shards and vNPUs)
DEMO_PLAN: dict[str, Any] = {
    "name": "standard",
    "currency": "CNY",
    "storage_price": "0.10",
    "prices": [
        {"resource": "gpu", "model": "a100", "rate": "12.00"},
        {"resource": "gpu", "rate": "8.00"},
        {"resource": "npu", "model": "910b", "rate": "9.00"},
        {"resource": "npu", "rate": "6.00"},
        {"resource": "cpu", "rate": "0.05"},
        {"resource": "mem", "rate": "0.01"},
    ],
    "packages": [{"name": "lab-100", "monthly_fee": "900", "included_card_hours": "100"}],
}
#: project: package (None: pay as you go); projects, not domains, so no use is billed twice
DEMO_ACCOUNTS = {"cs101": None, "nlp": "lab-100", "vision": None}
DEMO_TOP_UP = Decimal("1000.00")
MEMBERS = {
    "alice": ("nlp", "member"),
    "bob": ("vision", "member"),
    "carol": ("cs101", "manager"),
    "dave": ("cs101", "member"),
}
#: domain admins: the teacher runs the teaching domain (courses, their members and quotas)
DOMAIN_ADMINS = {"carol": "teaching"}


def passwords_from(env: Mapping[str, str]) -> dict[str, str]:
    """``AIPOOL_DEMO_PASSWORD_<USER>`` where set, else a fresh random password."""
    return {
        u: env.get(f"AIPOOL_DEMO_PASSWORD_{u.upper()}") or secrets.token_urlsafe(9)
        for u in DEMO_USERS
    }


def seed(session: Session, passwords: Mapping[str, str]) -> dict[str, str]:
    """Create what is missing; returns the passwords of the users it created."""
    ensure_builtin(session)
    created: dict[str, str] = {}
    users: dict[str, User] = {}
    for name in DEMO_USERS:
        user = session.scalar(select(User).where(User.username == name))
        if user is None:
            user = User(
                username=name,
                display_name=name.capitalize(),
                password_hash=hash_password(passwords[name]),
                is_platform_admin=name == "admin",
            )
            session.add(user)
            created[name] = passwords[name]
        users[name] = user
    domains: dict[str, Domain] = {}
    for name, description in DOMAINS.items():
        found = session.scalar(select(Domain).where(Domain.name == name))
        domains[name] = found or Domain(name=name, description=description)
        session.add(domains[name])
    projects: dict[str, Project] = {}
    for name, (domain_name, description, qos) in PROJECTS.items():
        existing = session.scalar(select(Project).where(Project.name == name))
        projects[name] = existing or Project(
            name=name, domain=domains[domain_name], description=description, qos=qos
        )
        session.add(projects[name])
    session.flush()
    for username, (project_name, role) in MEMBERS.items():
        p, u = projects[project_name], users[username]
        if u.home_domain_id is None:  # the demo's users are their project's domain's
            u.home_domain_id = p.domain_id
        if (
            session.scalar(
                select(Membership.id).where(
                    Membership.project_id == p.id, Membership.user_id == u.id
                )
            )
            is None
        ):
            session.add(
                Membership(project_id=p.id, user_id=u.id, role_id=role_by_name(session, role).id)
            )
    session.commit()
    return created


def seed_domain_admins(session: Session) -> list[str]:
    """The demo's domain admins (the teacher of the teaching domain); returns those added."""
    added = []
    for username, domain_name in DOMAIN_ADMINS.items():
        d = session.scalar(select(Domain).where(Domain.name == domain_name))
        u = session.scalar(select(User).where(User.username == username))
        if d is None or u is None:
            continue
        held = select(DomainAdmin.id).where(
            DomainAdmin.domain_id == d.id, DomainAdmin.user_id == u.id
        )
        if session.scalar(held) is None:
            session.add(DomainAdmin(domain_id=d.id, user_id=u.id))
            added.append(f"{username}@{domain_name}")
    session.commit()
    return added


def seed_billing(session: Session) -> list[str]:
    """The demo plan if there is none of its name, and the projects' billing accounts that are
    missing, each with a first top-up; returns the tenants it opened."""
    if session.scalar(select(PricePlan.id).where(PricePlan.name == DEMO_PLAN["name"])) is None:
        apply_plan(session, DEMO_PLAN)
    opened: list[str] = []
    for tenant, package in DEMO_ACCOUNTS.items():
        if session.scalar(select(BillingAccount.id).where(BillingAccount.tenant == tenant)):
            continue
        open_account(
            session, tenant, DEMO_PLAN["name"], package, tenant_exists=tenant_check(session)
        )
        top_up(session, tenant, DEMO_TOP_UP, actor="demo", note="demo credit")
        opened.append(tenant)
    return opened
