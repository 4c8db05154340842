"""The drift between portal memberships and Slurm associations, both ways (pure)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from portal.audit.models import AuditEvent
from portal.control.daemon import Daemon
from portal.extensions import db
from portal.quotas import slurmsync
from portal.quotas.drift import SyncSnapshot, changes, diff, managed
from portal.quotas.render import SlurmPlan
from slurm_plugins.client.models import Association
from slurm_plugins.client.specs import AccountSpec, UserSpec
from tests.unit.portal.conftest import Env

DOMAINS = frozenset({"teaching", "research"})
WANTED = SlurmPlan(
    accounts=(
        AccountSpec("research", "root", "Research"),
        AccountSpec("teaching", "root", "Teaching"),
        AccountSpec("nlp", "research", "NLP"),
        AccountSpec("cs101", "teaching", "CS101"),
    ),
    users=(
        UserSpec("alice", "nlp", ("normal",), "normal"),
        UserSpec("carol", "cs101", ("normal",), "normal"),
    ),
)


def account(name: str, parent: str = "root") -> Association:
    return Association(cluster="lab", account=name, parent=parent)


def assoc(user: str, acct: str) -> Association:
    return Association(
        cluster="lab", account=acct, user=user, qos=("normal",), default_qos="normal"
    )


IN_STEP = (
    account("root", ""),
    account("research"),
    account("teaching"),
    account("nlp", "research"),
    account("cs101", "teaching"),
    assoc("root", "root"),
    assoc("aipool", "root"),
    assoc("alice", "nlp"),
    assoc("carol", "cs101"),
)


def snap(*have: Association, domain: str | None = None) -> SyncSnapshot:
    return SyncSnapshot(WANTED, tuple(have), DOMAINS, frozenset({"old"}), domain=domain)


def test_in_step_is_empty() -> None:
    planned = diff(snap(*IN_STEP))
    assert planned.empty
    assert planned.lines() == []
    assert planned.commands(IN_STEP) == []


def test_removed_member_is_removed() -> None:
    have = (*IN_STEP, assoc("bob", "cs101"))
    planned = diff(snap(*have))
    assert planned.remove_users == (("bob", "cs101"),)
    assert planned.commands(have) == ["delete user where name=bob account=cs101"]
    assert changes(planned)["removed"] == ["bob@cs101"]


def test_missing_member_is_added() -> None:
    have = tuple(a for a in IN_STEP if a.user != "carol")
    planned = diff(snap(*have))
    assert planned.added_users == (("carol", "cs101"),)
    assert planned.remove_users == ()
    assert planned.commands(have) == ["add user carol Account=cs101 QOS=normal DefaultQOS=normal"]


def test_both_ways_at_once() -> None:
    have = (*(a for a in IN_STEP if a.user != "alice"), assoc("dave", "nlp"))
    planned = diff(snap(*have))
    assert planned.added_users == (("alice", "nlp"),)
    assert planned.remove_users == (("dave", "nlp"),)
    assert len(planned.lines()) == 2


@pytest.mark.parametrize(
    "outside",
    [
        assoc("bob", "root"),  # the root account is the site's
        assoc("bob", "physics"),  # an account outside the portal's domains
        account("physics"),
        assoc("root", "cs101"),  # root is never removed
        account("vision", "research"),  # under a domain, but no project the portal deleted
        assoc("bob", "vision"),
    ],
)
def test_what_the_site_manages_is_left(outside: Association) -> None:
    have = (*IN_STEP, account("physics"), outside)
    assert diff(snap(*have)).empty


def test_deleted_project_account_is_removed_with_its_users() -> None:
    have = (*IN_STEP, account("old", "teaching"), assoc("dave", "old"))
    planned = diff(snap(*have))
    assert planned.remove_accounts == ("old",)
    assert planned.remove_users == (("dave", "old"),)
    assert planned.commands(have) == [
        "delete user where name=dave account=old",
        "delete account where name=old",
    ]


def test_one_domain_only() -> None:
    have = (*IN_STEP, assoc("bob", "cs101"), assoc("bob", "nlp"))
    planned = diff(snap(*have, domain="teaching"))
    assert planned.remove_users == (("bob", "cs101"),)
    assert managed(snap(*have, domain="teaching")) == {"teaching", "cs101"}
    assert {u.account for u in planned.users} == {"cs101"}


def test_role_change_is_not_a_removal() -> None:
    have = (*(a for a in IN_STEP if a.user != "alice"), assoc("alice", "nlp"))
    wanted = SlurmPlan(
        WANTED.accounts,
        (UserSpec("alice", "nlp", ("normal", "high"), "normal"), WANTED.users[1]),
    )
    planned = diff(SyncSnapshot(wanted, have, DOMAINS))
    assert planned.remove_accounts == ()
    assert planned.remove_users == ()
    assert planned.added_users == ()
    assert planned.add == (
        "modify user where name=alice account=nlp set QOS=normal,high DefaultQOS=normal",
    )


# ------------------------------------------------------------------ through the portal
def _pairs(env: Env) -> set[tuple[str, str]]:
    return {(a.user, a.account) for a in env.slurm.assocs if a.user}


def test_removing_a_member_removes_their_association(env: Env) -> None:
    cs101, dave = env.world.projects["cs101"], env.world.users["dave"]
    assert ("dave", "cs101") in _pairs(env)
    r = env.api("carol").delete(f"/api/v1/projects/{cs101}/members/{dave}")
    assert r.status_code == 204
    assert ("dave", "cs101") not in _pairs(env)
    assert ["delete user where name=dave account=cs101"] in env.slurm.applied
    assert ("carol", "cs101") in _pairs(env)  # the others stay
    assert ("root", "physics") in _pairs(env)  # and what the site made outside the portal


def test_the_reconciler_repairs_drift_both_ways_and_audits_it(env: Env) -> None:
    env.slurm.assocs = [a for a in env.slurm.assocs if (a.user, a.account) != ("carol", "cs101")]
    env.slurm.assocs.append(assoc("mallory", "nlp"))
    with env.app.app_context():
        looked = slurmsync.reconcile(db.session, env.slurm, sync=False)
        assert not looked.applied
        assert looked.plan.remove_users == (("mallory", "nlp"),)
        assert ("carol", "cs101") in looked.plan.added_users
        assert ("mallory", "nlp") in _pairs(env)  # a dry run changes nothing
        done = slurmsync.reconcile(db.session, env.slurm, sync=True)
        assert done.applied
        assert "delete user where name=mallory account=nlp" in done.commands
        assert any("add user carol Account=cs101" in c for c in done.commands)
        again = slurmsync.reconcile(db.session, env.slurm, sync=True)
        assert again.plan.remove_users == ()  # (the fake takes additions without keeping them)
        events = db.session.scalars(
            select(AuditEvent).where(AuditEvent.action == "slurm.sync")
        ).all()
    assert ("mallory", "nlp") not in _pairs(env)
    assert any(
        e.actor == "system" and e.after and "mallory@nlp" in e.after["removed"] for e in events
    )


def test_the_control_daemon_runs_the_sync_on_its_cycle(env: Env) -> None:
    env.slurm.assocs.append(assoc("mallory", "cs101"))
    planned = Daemon(env.app, dry_run=True).slurm_pass()
    assert "would slurm: remove mallory from account cs101" in " ".join(planned)
    assert ("mallory", "cs101") in _pairs(env)
    lines: list[str] = []
    daemon = Daemon(env.app, echo=lines.append, loops=("slurm",))
    daemon.tick()
    assert ("mallory", "cs101") not in _pairs(env)
    assert any("remove mallory from account cs101" in line for line in lines)
    daemon.tick()  # not due again before slurm_every_s
    assert sum("mallory" in line for line in lines) == 1
