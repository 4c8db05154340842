"""Job history and re-runs, per-job utilisation charts and Jupyter connect links, each with
its permission checks in the service (own, project reader, other tenants)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from portal.jobs.chart import HEIGHT, WIDTH, line_chart
from slurm_plugins.client.models import JobState
from slurm_plugins.node import write_samples
from tests.unit.portal.conftest import Env
from tests.unit.portal.jupyter_jobs import jupyter_job
from tests.unit.portal.test_pages import login


def form(env: Env, **extra: Any) -> dict[str, Any]:
    return {
        "project_id": env.world.projects["nlp"],
        "name": "train",
        "time_limit": 30,
        "script": "#!/bin/bash\npython train.py\n",
        "gpus": 1,
        **extra,
    }


SPEC = {"name": "hello", "resources": {"gpus": 0.25}, "command": ["python", "-c", "print(1)"]}


def test_rerun_resubmits_the_stored_form_as_the_owner(env: Env) -> None:
    first = env.api("alice").post("/api/v1/jobs", json=form(env)).json["job_id"]
    env.slurm.set_state(first, JobState.COMPLETED)
    r = env.api("alice").post(f"/api/v1/jobs/{first}/rerun")
    assert r.status_code == 201, r.json
    again = r.json["job_id"]
    assert again != first
    (u1, script1, props1), (u2, script2, props2) = env.slurm.submitted
    assert (u2, script2, props2) == (u1, script1, props1)
    assert u2 == "alice"
    rows = env.api("alice").get("/api/v1/jobs/history").json
    assert [(r["job_id"], r["rerun_of"], r["kind"]) for r in rows] == [
        (again, first, "form"),
        (first, None, "form"),
    ]
    assert rows[0]["request"]["script"] == "#!/bin/bash\npython train.py\n"
    audit = env.api("admin").get("/api/v1/audit?action=job.submit").json
    assert audit[0]["after"]["rerun_of"] == first


def test_rerun_of_a_spec_renders_the_spec_again(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    first = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": SPEC})
    env.slurm.set_state(first.json["job_id"], JobState.FAILED)
    r = env.api("alice").post(f"/api/v1/jobs/{first.json['job_id']}/rerun")
    assert r.status_code == 201, r.json
    assert env.slurm.submitted[1] == env.slurm.submitted[0]
    row = env.api("alice").get("/api/v1/jobs/history?page_size=1").json[0]
    assert (row["kind"], row["request"]) == ("spec", SPEC)


def test_only_the_owner_reruns_and_others_tenants_see_nothing(env: Env) -> None:
    job = env.api("alice").post("/api/v1/jobs", json=form(env)).json["job_id"]
    # gina reads nlp's jobs through her group, erin is research's admin: they see it, may
    # not re-run it; bob (vision) and tina (teaching) do not even see it
    for who, status in (("gina", 403), ("erin", 403), ("admin", 403), ("bob", 404), ("tina", 404)):
        assert env.api(who).post(f"/api/v1/jobs/{job}/rerun").status_code == status, who
    assert len(env.slurm.submitted) == 1
    assert env.api("bob").get("/api/v1/jobs/history").json == []
    assert [r["job_id"] for r in env.api("gina").get("/api/v1/jobs/history").json] == [job]
    assert [r["job_id"] for r in env.api("erin").get("/api/v1/jobs/history").json] == [job]
    assert env.api("tina").get("/api/v1/jobs/history").json == []
    # a job the portal did not submit has nothing to re-run
    outside = env.slurm.add_job("alice", "nlp")
    assert env.api("alice").post(f"/api/v1/jobs/{outside}/rerun").status_code == 404


def test_rerun_checks_the_submit_permission_again(env: Env) -> None:
    job = env.api("alice").post("/api/v1/jobs", json=form(env)).json["job_id"]
    env.slurm.set_state(job, JobState.COMPLETED)
    env.api("admin").put(f"/api/v1/projects/{env.world.projects['nlp']}/quota", json={"gpus": 0})
    r = env.api("alice").post(f"/api/v1/jobs/{job}/rerun")
    assert r.status_code == 409
    assert r.json["error"] == "quota_exceeded"
    assert len(env.slurm.submitted) == 1
    alice = env.world.users["alice"]
    nlp = env.world.projects["nlp"]
    assert env.api("admin").delete(f"/api/v1/projects/{nlp}/members/{alice}").status_code == 204
    assert env.api("alice").post(f"/api/v1/jobs/{job}/rerun").status_code == 404
    assert len(env.slurm.submitted) == 1


def test_history_is_paginated_newest_first(env: Env) -> None:
    ids = [env.api("sam").post("/api/v1/jobs", json=form(env)).json["job_id"] for _ in range(5)]
    r = env.api("sam").get("/api/v1/jobs/history?page=2&page_size=2")
    assert [x["job_id"] for x in r.json] == ids[::-1][2:4]
    assert json.loads(r.headers["X-Pagination"])["total"] == 5
    mine = env.api("gina").get("/api/v1/jobs/history?mine=true").json
    assert mine == []


def _samples(tmp: Path, job_id: int, values: list[float], now: float) -> None:
    for i, v in enumerate(values):
        write_samples(tmp, "gpu1", {job_id: v}, now - 60 * (len(values) - i))


def test_metrics_come_from_the_agents_samples_for_those_who_see_the_job(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(env.app.config, "SAMPLES_DIR", str(tmp_path))
    job = env.slurm.add_job("alice", "nlp")
    other = env.slurm.add_job("bob", "vision")
    now = time.time()
    _samples(tmp_path, job, [10.0, 50.0, 90.0], now)
    _samples(tmp_path, other, [5.0], now)
    write_samples(tmp_path, "gpu1", {job: 1.0}, now - 7200)  # outside the default hour
    r = env.api("alice").get(f"/api/v1/jobs/{job}/metrics")
    assert r.status_code == 200, r.json
    assert [s["util"] for s in r.json["samples"]] == [10.0, 50.0, 90.0]
    assert r.json["window"] == 3600
    r = env.api("gina").get(f"/api/v1/jobs/{job}/metrics?window=86400")
    assert [s["util"] for s in r.json["samples"]] == [1.0, 10.0, 50.0, 90.0]
    assert env.api("bob").get(f"/api/v1/jobs/{job}/metrics").status_code == 404
    assert env.api("alice").get(f"/api/v1/jobs/{job}/metrics?window=5").status_code == 422
    page = login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    assert "<polyline" in page
    assert "3 samples; last 90.0%, mean 50.0%." in page


def test_no_samples_directory_means_an_empty_chart(env: Env) -> None:
    job = env.slurm.add_job("alice", "nlp")
    assert env.api("alice").get(f"/api/v1/jobs/{job}/metrics").json["samples"] == []
    page = login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    assert "No utilisation samples in this window." in page


def test_line_chart_scales_into_the_box() -> None:
    chart = line_chart([(100.0, 0.0), (150.0, 50.0), (200.0, 250.0)], y_max=100.0)
    assert chart.points == f"0.0,{HEIGHT:.1f} {WIDTH / 2:.1f},{HEIGHT / 2:.1f} {WIDTH:.1f},0.0"
    assert (chart.count, chart.last, chart.x_min, chart.x_max) == (3, 250.0, 100.0, 200.0)
    assert line_chart([], y_max=100.0).points == ""


def _jupyter_job(
    env: Env, tmp: Path, monkeypatch: pytest.MonkeyPatch, url: str = "http://10.0.0.5:50123/"
) -> int:
    return jupyter_job(env, tmp, 50123, monkeypatch, address="10.0.0.5", conn={"url": url})


def test_jupyter_link_for_the_owner_only(
    env: Env, tmp_path: Path, users_own_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _jupyter_job(env, tmp_path, monkeypatch)
    r = env.api("alice").get(f"/api/v1/jobs/{job}/jupyter")
    assert r.json == {
        "ready": True,
        "url": f"http://10.0.0.5:50123/jupyter/{job}/?token=s3cret",
        "host": "10.0.0.5",
        "port": 50123,
        "token": "s3cret",
        "app": "lab",
    }
    for who, status in (("gina", 403), ("erin", 403), ("admin", 403), ("bob", 404)):
        assert env.api(who).get(f"/api/v1/jobs/{job}/jupyter").status_code == status, who
    page = login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    assert f'href="/jupyter/{job}/lab"' in page  # through the portal's proxy
    assert "s3cret" not in page  # the token stays on the server
    page = login(env, "gina").get(f"/jobs/{job}").get_data(as_text=True)
    assert "s3cret" not in page
    assert 'id="jupyter"' not in page


def test_jupyter_before_the_server_starts_and_for_plain_jobs(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _jupyter_job(env, tmp_path, monkeypatch)
    (tmp_path / f"jupyter-{job}.json").unlink()
    assert env.api("alice").get(f"/api/v1/jobs/{job}/jupyter").json["ready"] is False
    assert "starting" in login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    plain = env.slurm.add_job("alice", "nlp")
    assert env.api("alice").get(f"/api/v1/jobs/{plain}/jupyter").status_code == 409
    labelled = env.slurm.add_job("alice", "nlp", comment="aipool:name=nb,jupyter=1")
    assert env.api("alice").get(f"/api/v1/jobs/{labelled}/jupyter").status_code == 409


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd"])
def test_the_url_shown_is_built_from_slurms_address_never_the_files(
    env: Env, tmp_path: Path, url: str, users_own_files: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _jupyter_job(env, tmp_path, monkeypatch, url)
    shown = env.api("alice").get(f"/api/v1/jobs/{job}/jupyter").json["url"]
    assert shown == f"http://10.0.0.5:50123/jupyter/{job}/?token=s3cret"


@pytest.mark.parametrize("state", [JobState.PENDING, JobState.RUNNING, JobState.COMPLETING])
def test_a_job_still_queued_or_running_is_not_run_again(env: Env, state: JobState) -> None:
    """Another run is for a job that has ended: the page offers none before, and the API
    refuses one, in the caller's language; a job being cancelled offers no cancel either."""
    job = env.api("alice").post("/api/v1/jobs", json=form(env)).json["job_id"]
    env.slurm.set_state(job, state)
    r = env.api("alice").post(f"/api/v1/jobs/{job}/rerun", headers={"Accept-Language": "zh-CN"})
    assert r.status_code == 409, r.json
    assert "仍在排队或运行" in r.json["message"]
    assert len(env.slurm.submitted) == 1
    page = login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    assert "Run again" not in page
    assert ("Cancel job" in page) is (state is not JobState.COMPLETING)
    if state is JobState.COMPLETING:  # cancelled, Slurm cleaning up: no second cancel
        assert env.api("alice").delete(f"/api/v1/jobs/{job}").status_code == 409


def test_history_and_rerun_pages(env: Env) -> None:
    job = env.api("alice").post("/api/v1/jobs", json=form(env)).json["job_id"]
    client = login(env, "alice")
    listed = client.get("/jobs/history").get_data(as_text=True)
    assert f">{job}</a>" in listed
    assert "<td>train</td><td>nlp</td>" in listed
    assert "Run again" not in client.get(f"/jobs/{job}").get_data(as_text=True)  # queued
    env.slurm.set_state(job, JobState.COMPLETED)
    page = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert "Run again" in page
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    r = client.post(f"/jobs/{job}/rerun", data={"csrf_token": token})
    assert r.status_code == 302
    assert len(env.slurm.submitted) == 2
    assert "Run again" not in login(env, "gina").get(f"/jobs/{job}").get_data(as_text=True)
    assert client.post(f"/jobs/{job}/rerun").status_code == 400  # no CSRF token


def test_a_failed_jupyter_session_says_so_with_its_exit_code(
    env: Env, tmp_path: Path, users_own_files: None
) -> None:
    out = tmp_path / "nb.out"
    out.write_text("jupyter: command not found\n")
    job = env.slurm.add_job(
        "alice",
        "nlp",
        JobState.FAILED,
        comment="aipool:name=nb,jupyter=1",
        stdout_path=str(out),
        exit_code=127,
    )
    page = login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    assert "starting" not in page
    assert "ended (Failed, exit code 127" in page
    assert '<td id="exit-code">127</td>' in page
    assert "jupyter: command not found" in page  # the log tail says why


@pytest.mark.parametrize(
    ("site_zone", "lang", "shown"),
    [
        ("Asia/Shanghai", "zh-CN", "时间均为中国时间（GMT+08:00）。"),
        ("Asia/Shanghai", "en", "Times are in China Time (GMT+08:00)."),
        ("UTC", "zh-CN", "时间均为UTC。"),
    ],
)
def test_job_pages_name_the_time_zone_their_times_are_in(
    env: Env, monkeypatch: pytest.MonkeyPatch, site_zone: str, lang: str, shown: str
) -> None:
    """A job's times are the site's; JupyterLab's log beneath them prints UTC: the page says
    which zone its own are in, in the reader's words."""
    monkeypatch.setattr(env.app.extensions["babel"], "default_timezone", site_zone)
    job = env.api("alice").post("/api/v1/jobs", json=form(env)).json["job_id"]
    client = login(env, "alice")
    for url in (f"/jobs/{job}", "/jobs/history"):
        page = client.get(url, headers={"Accept-Language": lang}).get_data(as_text=True)
        assert shown in page, url
