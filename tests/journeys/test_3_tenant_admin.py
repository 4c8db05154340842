"""(c) The teacher, a domain admin, creates a course project, adds a student and sets a GPU
quota; with no other admin the quota is in sacctmgr and enforced: an over-quota job is
refused with the admission hook's own words, in sbatch and in the portal. (g) The audit log
shows each step."""

from __future__ import annotations

import contextlib

import httpx

from tests.journeys.conftest import Site, wait_for

PROJECT = "cs102j"


def _cleanup(site: Site) -> None:
    client = site.client
    users = [(a.user, a.account) for a in client.associations() if a.user and a.account == PROJECT]
    with contextlib.suppress(Exception):
        client.remove_associations(users=users, accounts=[PROJECT])


def _drop(carol: httpx.Client, project: int) -> None:
    """The course goes as a domain admin removes one: members first, then the project."""
    for m in carol.get(f"/projects/{project}/members").json():
        carol.delete(f"/projects/{project}/members/{m['user']['id']}")
    carol.delete(f"/projects/{project}")


def test_a_domain_admins_course_and_quota_reach_slurm_alone(site: Site) -> None:
    carol = site.api("carol")
    teaching = next(d for d in carol.get("/domains").json() if d["name"] == "teaching")
    member = next(r for r in carol.get("/roles").json() if r["name"] == "member")
    for left in carol.get("/projects").json():  # from a run that was cut short
        if left["name"] == PROJECT:
            _drop(carol, left["id"])
    _cleanup(site)
    course = {"domain_id": teaching["id"], "name": PROJECT, "description": "CS102"}
    made = carol.post("/projects", json={**course, "qos": "normal,low"})
    assert made.status_code == 201, made.text
    project = made.json()["id"]
    try:
        added = carol.post(
            f"/projects/{project}/members", json={"username": "dave", "role_id": member["id"]}
        )
        assert added.status_code == 201, added.text
        saved = carol.put(f"/projects/{project}/quota", json={"gpus": 1})
        assert saved.status_code == 200, saved.text
        assert saved.json()["slurm"]["applied"] is True

        assocs = site.client.associations()
        account = next(a for a in assocs if a.account == PROJECT and not a.user)
        assert dict(account.grp_tres.counts) == {"gres/gpu": 1}
        assert any(a.user == "dave" and a.account == PROJECT for a in assocs)

        # dave's own sbatch: the hook refuses a job over the quota, in its own words
        done = site.shell("dave", "sbatch", "-A", PROJECT, "-p", "gpu", "--gres=gpu:2",
                          "-t", "5", "--wrap", "true")  # fmt: skip
        assert done.returncode != 0, done.stdout
        said = done.stderr.strip().splitlines()[0].removeprefix("sbatch: error: ")
        assert f"tenant {PROJECT} may use at most 1 per job" in said, done.stderr
        # within the quota it runs, as dave, charged to the new course
        ok = site.shell("dave", "sbatch", "--parsable", "-A", PROJECT, "-p", "gpu",
                        "--gres=gpu:1", "-t", "5", "--wrap", "id -un")  # fmt: skip
        assert ok.returncode == 0, ok.stderr
        job_id = int(ok.stdout.strip().split(";")[0])
        wait_for(
            lambda: (j := site.client.job(job_id)) is None or not j.state.is_active,
            120,
            f"job {job_id} done",
        )

        # through the portal: refused, and told why
        dave = site.api("dave")
        r = dave.post(
            "/jobs",
            json={"project_id": project, "name": "too-big", "time_limit": 5, "gpus": 2,
                  "partition": "gpu", "script": "#!/bin/bash\ntrue\n"},
        )  # fmt: skip
        assert r.status_code == 409, r.text
        assert "1" in r.json()["message"]

        events = site.api("admin").get("/audit", params={"actor": "carol"}).json()
        actions = {e["action"] for e in events}
        assert {"project.create", "member.add", "quota.project", "slurm.sync"} <= actions, actions
    finally:
        _drop(carol, project)
        _cleanup(site)
