"""A member removed from a project can no longer spend it: carol (manager of cs101) adds bob,
who submits to cs101 from his own shell (the control); she removes him, and every try of his
after that, ``sbatch -A cs101`` from his shell and a job through the portal's API, is refused.
"""

from __future__ import annotations

import contextlib

import pytest

from tests.journeys.conftest import Site, wait_for
from tests.security.ledger import Ledger

pytestmark = pytest.mark.slurm

TRIES = 20
PROJECT = "cs101"
SBATCH = ("sbatch", "--parsable", "--hold", "-A", PROJECT, "-p", "cpu", "-t", "1",
          "-o", "/dev/null", "--wrap", "true")  # fmt: skip


def _ids(site: Site) -> tuple[int, int, int]:
    carol = site.api("carol")
    project = next(p["id"] for p in carol.get("/projects").json() if p["name"] == PROJECT)
    member = next(r["id"] for r in carol.get("/roles").json() if r["name"] == "member")
    bob = int(site.api("bob").get("/auth/me").json()["id"])
    return project, member, bob


def _has_association(site: Site) -> bool:
    return any(a.user == "bob" and a.account == PROJECT for a in site.client.associations())


def _remove(site: Site, project: int, bob: int) -> None:
    r = site.api("carol").delete(f"/projects/{project}/members/{bob}")
    assert r.status_code in (204, 404), r.text


def test_a_removed_member_submits_nothing_more(site: Site, ledger: Ledger) -> None:
    project, member, bob = _ids(site)
    _remove(site, project, bob)  # from a run cut short
    added = site.api("carol").post(
        f"/projects/{project}/members", json={"username": "bob", "role_id": member}
    )
    assert added.status_code == 201, added.text
    try:
        assert _has_association(site)
        control = site.shell("bob", *SBATCH)  # a member: accepted
        assert control.returncode == 0, control.stderr
        site.client.cancel([int(control.stdout.strip().split(";")[0])])
    finally:
        _remove(site, project, bob)
    assert not _has_association(site), "bob's association outlived his membership"
    accepted: list[int] = []
    for n in range(TRIES):
        done = site.shell("bob", *SBATCH)
        shown = "ACCEPTED" if done.returncode == 0 else ""
        ledger.attempt(f"sbatch -A {PROJECT} #{n}", shown, "ACCEPTED")
        if done.returncode == 0:
            accepted.append(int(done.stdout.strip().split(";")[0]))
        else:
            assert "account" in done.stderr.lower(), done.stderr
        r = site.api("bob").post(
            "/jobs",
            json={"project_id": project, "name": f"after-{n}", "partition": "cpu", "cpus": 1,
                  "time_limit": 1, "script": "#!/bin/bash\ntrue\n"},
        )  # fmt: skip
        shown = "ACCEPTED" if r.status_code < 300 else ""
        ledger.attempt(f"portal job in {PROJECT} #{n}", shown, "ACCEPTED")
        if r.status_code < 300:
            accepted.append(int(r.json()["job_id"]))
        else:
            assert r.status_code in (403, 404), (r.status_code, r.text)
    for job_id in accepted:
        with contextlib.suppress(Exception):
            site.client.cancel([job_id])
    print(f"\n{2 * TRIES} submissions after the removal, {len(accepted)} accepted")
    assert accepted == []
    assert ledger.leaks == []
    assert len(ledger.attempts) >= 2 * TRIES
    wait_for(lambda: not _has_association(site), 5, "no association again")
