"""Names in any script on every way in (API, spec, form, models, datasets), refused ones
explained in both languages; an ended job's page and output from what the accounting
database and the portal's own record keep."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

NAME = "训练-四分之一"
ZH = {"Accept-Language": "zh-CN"}
RULE = {"en": "of any script", "zh": "任意文字"}
HOSTILE = ["训练 四分之一", "a\nb", "a\x1bb", "$(id)", "a/b", "x" * 65, "2024", "\u202eabc", ""]


def _job(env: Env, **extra: Any) -> dict[str, Any]:
    return {
        "project_id": env.world.projects["nlp"],
        "name": NAME,
        "time_limit": 7,
        "script": "#!/bin/bash\necho hi\n",
        **extra,
    }


def test_a_chinese_job_name_goes_to_slurm_and_the_history_as_it_is(env: Env) -> None:
    r = env.api("alice").post("/api/v1/jobs", json=_job(env))
    assert r.status_code == 201, r.json
    assert env.slurm.submitted[-1][2]["name"] == NAME
    history = env.api("alice").get("/api/v1/jobs/history").json
    assert history[0]["name"] == NAME
    spec = {"name": NAME, "command": "echo hi"}
    r = env.api("alice").post(
        "/api/v1/jobs/spec", json={"project_id": env.world.projects["nlp"], "spec": spec}
    )
    assert r.status_code == 201, r.json
    assert env.slurm.requests[-1].name == NAME


@pytest.mark.parametrize("bad", HOSTILE, ids=[ascii(b)[:24] for b in HOSTILE])
def test_hostile_names_are_refused_everywhere_in_both_languages(env: Env, bad: str) -> None:
    alice = env.api("alice")
    nlp = env.world.projects["nlp"]
    for headers, rule in (({}, RULE["en"]), (ZH, RULE["zh"])):
        r = alice.post("/api/v1/jobs", json=_job(env, name=bad), headers=headers)
        assert r.status_code == 422, r.json
        if 0 < len(bad) <= 64:  # else too short or too long before anything else
            assert rule in r.json["errors"]["json"]["name"][0]
        r = alice.post(
            "/api/v1/jobs/spec",
            json={"project_id": nlp, "spec": {"name": bad, "command": "echo"}},
            headers=headers,
        )
        assert r.status_code == 422, r.json
        for kind in ("models", "datasets"):
            r = alice.post(f"/api/v1/{kind}", json={"project_id": nlp, "name": bad})
            assert r.status_code == 422, (kind, r.json)
    assert env.slurm.submitted == []


def test_the_form_takes_a_chinese_name_and_refuses_a_hostile_one(env: Env) -> None:
    client = login(env, "alice")
    form = {
        "kind": "batch",
        "project_id": env.world.projects["nlp"],
        "name": "训练 $(id)",
        "time_limit": 7,
        "script": "#!/bin/bash\necho hi\n",
        "csrf_token": csrf_of(client.get("/jobs/new").get_data(as_text=True)),
    }
    r = client.post("/jobs/new", data=form)
    assert r.status_code == 422
    assert RULE["en"] in r.get_data(as_text=True)
    assert env.slurm.submitted == []
    r = client.post("/jobs/new", data={**form, "name": NAME})
    assert r.status_code == 302, r.get_data(as_text=True)
    assert env.slurm.submitted[-1][2]["name"] == NAME


def _ended(env: Env, job_id: int, **fields: Any) -> None:
    """The job as 22.05's sacct gives it back: ended, no output path, its working directory."""
    job = env.slurm.job(job_id)
    assert job is not None
    env.slurm._jobs[job_id] = dataclasses.replace(  # the accounting database's view
        job,
        state=JobState.COMPLETED,
        exit_code=0,
        submit_time=datetime.now(UTC),
        stdout_path="",
        work_dir=str(env.app.config["JOB_WORKDIR"]),
        **fields,
    )


def test_an_ended_job_keeps_its_output_and_limit(env: Env, users_own_files: None) -> None:
    r = env.api("alice").post("/api/v1/jobs", json=_job(env))
    job_id = r.json["job_id"]
    _ended(env, job_id)
    out = Path(env.app.config["JOB_WORKDIR"]) / f"slurm-{job_id}.out"
    out.write_text("第一行\nprogress: 50%\n最后一行\n")
    shown = env.api("alice").get(f"/api/v1/jobs/{job_id}/output").json
    assert (shown["active"], shown["tail"], shown["progress"]) == (
        False,
        "第一行\nprogress: 50%\n最后一行",
        50.0,
    )
    page = login(env, "alice").get(f"/jobs/{job_id}").get_data(as_text=True)
    assert f"<small>{NAME}</small>" in page
    assert "最后一行</pre>" in page
    assert '<td id="time-limit">7 min' in page
    # others who may see the job get its state, not its output; the rest not even that
    assert env.api("gina").get(f"/api/v1/jobs/{job_id}/output").json["tail"] is None
    assert env.api("bob").get(f"/api/v1/jobs/{job_id}/output").status_code == 404


def test_a_spec_jobs_output_is_found_by_its_name(env: Env, users_own_files: None) -> None:
    spec = {"name": NAME, "command": "echo hi"}
    r = env.api("alice").post(
        "/api/v1/jobs/spec", json={"project_id": env.world.projects["nlp"], "spec": spec}
    )
    job_id = r.json["job_id"]
    _ended(env, job_id)
    (Path(env.app.config["JOB_WORKDIR"]) / f"{NAME}-{job_id}.out").write_text("完成\n")
    assert env.api("alice").get(f"/api/v1/jobs/{job_id}/output").json["tail"] == "完成"


def test_no_record_or_another_jobs_record_gives_no_output(env: Env, users_own_files: None) -> None:
    r = env.api("alice").post("/api/v1/jobs", json=_job(env))
    job_id = r.json["job_id"]
    (Path(env.app.config["JOB_WORKDIR"]) / f"slurm-{job_id}.out").write_text("x\n")
    # a rebuilt cluster's job of the same id, submitted a day later: not the portal's
    _ended(env, job_id)
    job = env.slurm.job(job_id)
    assert job is not None
    later = dataclasses.replace(job, submit_time=datetime(2099, 1, 1, tzinfo=UTC))
    env.slurm._jobs[job_id] = later
    assert env.api("alice").get(f"/api/v1/jobs/{job_id}/output").json["tail"] is None
    # a job submitted outside the portal, ended: 22.05 keeps no path
    other = env.slurm.add_job("alice", "nlp", JobState.COMPLETED, submit_time=datetime.now(UTC))
    assert env.api("alice").get(f"/api/v1/jobs/{other}/output").json["tail"] is None
