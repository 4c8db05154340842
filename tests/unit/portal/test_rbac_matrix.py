"""Every role by every object endpoint, by own and other tenants' objects.

For each case, the users in ``ok`` succeed (each on a fresh database), the users in
``forbidden`` get 403 and everyone else gets ``rest`` (404 for tenant objects: foreign
objects are invisible). Denied calls must change nothing: not the database, not Slurm.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select

from portal.extensions import Base, db
from portal.jobs.models import JUPYTER, JobRecord
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env

USERS = ("admin", "erin", "tina", "carol", "alice", "sam", "victor", "gina", "nobody")
RESEARCH_READERS = {"admin", "erin", "alice", "sam", "gina", "victor"}  # see the research domain


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # {nlp}, {cs101}, {vision}, {research}, {teaching}, {group}, {alice_job} …
    ok: frozenset[str]
    ok_status: int = 200
    forbidden: frozenset[str] = frozenset()
    rest: int = 404
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


def C(
    method: str,
    path: str,
    ok: set[str],
    ok_status: int = 200,
    *,
    forbidden: Collection[str] = (),
    rest: int = 404,
    **body: Any,
) -> Case:
    return Case(method, path, frozenset(ok), ok_status, frozenset(forbidden), rest, body)


NLP_MEMBERS_NO_MANAGE = {"alice", "sam", "gina"}
NOT_ADMINS = set(USERS) - {"admin", "erin", "tina"}
CASES = [
    # domains
    C("GET", "/domains/{research}", RESEARCH_READERS),
    C("GET", "/domains/{teaching}", {"admin", "tina", "carol"}),
    C(
        "PATCH",
        "/domains/{research}",
        {"admin", "erin"},
        forbidden={"alice", "sam", "gina", "victor"},
        description="x",
    ),
    C("DELETE", "/domains/{research}", {"admin"}, 409, rest=403),
    C("POST", "/domains", {"admin"}, 201, rest=403, name="newdom"),
    C(
        "GET",
        "/domains/{research}/admins",
        {"admin", "erin"},
        forbidden={"alice", "sam", "gina", "victor"},
    ),
    C("POST", "/domains/{research}/admins", {"admin"}, 201, rest=403, username="nobody"),
    C("DELETE", "/domains/{research}/admins/{erin_id}", {"admin"}, 204, rest=403),
    C("GET", "/domains/{research}/quota", RESEARCH_READERS),
    C(
        "PUT",
        "/domains/{research}/quota",
        {"admin"},
        forbidden=RESEARCH_READERS - {"admin"},
        gpus=64,
    ),
    # projects
    C(
        "POST",
        "/projects",
        {"admin", "erin"},
        201,
        forbidden={"alice", "sam", "gina", "victor"},
        domain_id="{research}",
        name="newproj",
    ),
    C("GET", "/projects/{nlp}", {"admin", "erin", "alice", "gina"}, forbidden={"sam"}),
    C("GET", "/projects/{cs101}", {"admin", "tina", "carol"}),
    C("GET", "/projects/{vision}", {"admin", "erin", "victor"}),
    C(
        "PATCH",
        "/projects/{nlp}",
        {"admin", "erin"},
        forbidden=NLP_MEMBERS_NO_MANAGE,
        description="x",
    ),
    C("PATCH", "/projects/{cs101}", {"admin", "tina", "carol"}, description="x"),
    C("PATCH", "/projects/{cs101}", {"admin", "tina"}, forbidden={"carol"}, qos="normal"),
    C("DELETE", "/projects/{nlp}", {"admin", "erin"}, 409, forbidden=NLP_MEMBERS_NO_MANAGE),
    C("GET", "/projects/{nlp}/quota", {"admin", "erin", "alice", "gina"}, forbidden={"sam"}),
    C("PUT", "/projects/{nlp}/quota", {"admin", "erin"}, forbidden=NLP_MEMBERS_NO_MANAGE, gpus=2),
    C("PUT", "/projects/{cs101}/quota", {"admin", "tina"}, forbidden={"carol"}, shards=64),
    # members
    C("GET", "/projects/{nlp}/members", {"admin", "erin", "alice"}, forbidden={"sam", "gina"}),
    C(
        "POST",
        "/projects/{nlp}/members",
        {"admin", "erin"},
        201,
        forbidden=NLP_MEMBERS_NO_MANAGE,
        username="nobody",
        role_id="{member}",
    ),
    C(
        "POST",
        "/projects/{cs101}/members",
        {"admin", "tina", "carol"},
        201,
        username="nobody",
        role_id="{member}",
    ),
    C(
        "GET",
        "/projects/{nlp}/members/{alice_id}",
        {"admin", "erin", "alice"},
        forbidden={"sam", "gina"},
    ),
    C(
        "PATCH",
        "/projects/{nlp}/members/{alice_id}",
        {"admin", "erin"},
        forbidden=NLP_MEMBERS_NO_MANAGE,
        role_id="{viewer}",
    ),
    C(
        "DELETE",
        "/projects/{nlp}/members/{alice_id}",
        {"admin", "erin"},
        204,
        forbidden=NLP_MEMBERS_NO_MANAGE,
    ),
    C("DELETE", "/projects/{cs101}/members/{dave_id}", {"admin", "tina", "carol"}, 204),
    # groups
    C(
        "POST",
        "/groups",
        {"admin", "erin"},
        201,
        forbidden={"alice", "sam", "gina", "victor"},
        domain_id="{research}",
        name="g2",
    ),
    C("GET", "/groups/{group}", {"admin", "erin"}),
    C("PATCH", "/groups/{group}", {"admin", "erin"}, description="x"),
    C("DELETE", "/groups/{group}", {"admin", "erin"}, 204),
    C("GET", "/groups/{group}/members", {"admin", "erin"}),
    C("POST", "/groups/{group}/members", {"admin", "erin"}, 201, username="nobody"),
    C("DELETE", "/groups/{group}/members/{gina_id}", {"admin", "erin"}, 204),
    C("GET", "/groups/{group}/grants", {"admin", "erin"}),
    C(
        "PUT",
        "/groups/{group}/grants",
        {"admin", "erin"},
        project_id="{vision}",
        role_id="{viewer}",
    ),
    C("GET", "/groups/{group}/grants/{nlp}", {"admin", "erin"}),
    C("DELETE", "/groups/{group}/grants/{nlp}", {"admin", "erin"}, 204),
    # users
    C("GET", "/users/{bob_id}", {"admin", "erin"}),
    C("GET", "/users/{dave_id}", {"admin", "tina", "carol"}),
    # domain admins manage the users of their domains only; others are refused whoever it is
    C("PATCH", "/users/{bob_id}", {"admin", "erin"}, forbidden=NOT_ADMINS, display_name="B"),
    C("POST", "/users/{bob_id}/password", {"admin", "erin"}, forbidden=NOT_ADMINS),
    C(
        "POST",
        "/users",
        {"admin", "erin"},
        201,
        forbidden=NOT_ADMINS,
        username="newuser",
        project_id="{nlp}",
        role_id="{member}",
    ),
    # roles
    C("POST", "/roles", {"admin"}, 201, rest=403, name="r2", permissions=["project.read"]),
    C("PATCH", "/roles/{submitter}", {"admin"}, rest=403, description="x"),
    C("DELETE", "/roles/{submitter}", {"admin"}, 409, rest=403),
    # jobs
    C("GET", "/jobs/{alice_job}", {"admin", "erin", "alice", "gina"}),
    C("DELETE", "/jobs/{alice_job}", {"admin", "erin", "alice"}, forbidden={"gina"}),
    C("GET", "/jobs/{carol_job}", {"admin", "tina", "carol"}),
    C("GET", "/jobs/{alice_job}/metrics", {"admin", "erin", "alice", "gina"}),
    C("GET", "/jobs/{carol_job}/metrics", {"admin", "tina", "carol"}),
    C("GET", "/jobs/{alice_job}/jupyter", {"alice"}, forbidden={"admin", "erin", "gina"}),
    C(
        "POST",
        "/jobs/{alice_ended_job}/rerun",
        {"alice"},
        201,
        forbidden={"admin", "erin", "gina"},
    ),
    C("DELETE", "/jobs/{carol_job}", {"admin", "tina", "carol"}),
    C(
        "POST",
        "/jobs",
        {"admin", "erin", "alice", "sam"},
        201,
        forbidden={"gina"},
        project_id="{nlp}",
        name="j",
        time_limit=5,
        script="#!/bin/bash\ntrue\n",
    ),
    C(
        "POST",
        "/jobs/spec",
        {"admin", "erin", "alice", "sam"},
        201,
        forbidden={"gina"},
        project_id="{nlp}",
        spec={"name": "s", "resources": {"gpus": 0.25}, "command": ["true"]},
    ),
    # Slurm sync and audit
    C("GET", "/slurm/sync", {"admin"}, rest=403),
    C("POST", "/slurm/sync", {"admin"}, rest=403),
    C("GET", "/slurm/policy", {"admin"}, rest=403),
    C("POST", "/slurm/policy", {"admin"}, rest=403),
    C("GET", "/audit", {"admin", "erin", "tina"}, rest=403),
    # clusters
    C("GET", "/clusters", {"admin", "erin", "tina"}, rest=403),
]


def _names(env: Env) -> dict[str, Any]:
    w = env.world
    return {
        **w.projects,
        **w.domains,
        **w.roles,
        "group": w.groups["nlp-readers"],
        **{f"{u}_id": uid for u, uid in w.users.items()},
        "alice_job": _portal_job(env, "alice", "nlp"),
        "alice_ended_job": _portal_job(env, "alice", "nlp", JobState.COMPLETED),
        "carol_job": env.slurm.add_job("carol", "cs101"),
    }


def _portal_job(env: Env, user: str, project: str, state: JobState = JobState.RUNNING) -> int:
    """A Jupyter job with a history row, as if submitted through the portal (its app marked:
    only such a job is proxied)."""
    now = datetime.now(UTC)
    job_id = env.slurm.add_job(
        user, project, state, comment="aipool:name=nb,jupyter=1", submit_time=now
    )
    with env.app.app_context():
        db.session.add(
            JobRecord(
                job_id=job_id,
                user_id=env.world.users[user],
                project_id=env.world.projects[project],
                kind="form",
                name="nb",
                request={"name": "nb", "time_limit": 5, "script": "#!/bin/bash\ntrue\n"},
                app=JUPYTER,
                submitted_at=now,
            )
        )
        db.session.commit()
    return job_id


def _fill(value: Any, names: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return names[value[1:-1]]
    if isinstance(value, str):
        return value.format(**names)
    return value


def _call(env: Env, user: str, case: Case, names: dict[str, Any]) -> Any:
    path = "/api/v1" + case.path.format(**names)
    body = {k: _fill(v, names) for k, v in case.body.items()}
    kwargs = {"json": body} if case.method in {"POST", "PUT", "PATCH"} else {}
    return env.api(user).open(path, method=case.method, **kwargs)


def _fingerprint(env: Env) -> tuple[Any, ...]:
    with env.app.app_context():
        counts = tuple(
            db.session.scalar(select(func.count()).select_from(t))
            for t in Base.metadata.sorted_tables
            if t.name != "api_tokens"
        )
        rows = tuple(
            tuple(db.session.execute(select(t)).all())
            for t in Base.metadata.sorted_tables
            if t.name not in {"api_tokens", "audit_events"}
        )
    s = env.slurm
    return counts, rows, len(s.submitted), len(s.cancelled), len(s.applied)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_denied_calls_change_nothing(env: Env, case: Case) -> None:
    names = _names(env)
    before = _fingerprint(env)
    for user in USERS:
        if user in case.ok:
            continue
        expected = 403 if user in case.forbidden else case.rest
        r = _call(env, user, case, names)
        assert r.status_code == expected, (user, r.status_code, r.json)
    assert _fingerprint(env) == before


@pytest.mark.parametrize(
    ("case", "user"),
    [(c, u) for c in CASES for u in sorted(c.ok)],
    ids=lambda v: v.id if isinstance(v, Case) else v,
)
def test_allowed_calls(env: Env, case: Case, user: str) -> None:
    names = _names(env)
    r = _call(env, user, case, names)
    assert r.status_code == case.ok_status, (user, r.status_code, r.json)
