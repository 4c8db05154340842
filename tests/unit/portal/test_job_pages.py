"""The job pages in both languages: state and Slurm's reason in words with the code beside
them, the policy's reasons, resources in cards, the true start and end, the log tail and its
refresh endpoint (owner only), cancel after a confirmation, history rows with state, end,
resources and links."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from slurm_plugins.client.models import JobState, Tres
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

ZH = {"Accept-Language": "zh-CN"}
START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_a_pending_job_says_why_in_words_with_the_code_small(env: Env) -> None:
    job = env.slurm.add_job(
        "alice",
        "nlp",
        JobState.PENDING,
        reason="AssocGrpGRES",
        tres_req=Tres({"gres/shard": 8, "cpu": 2, "mem": 4096, "node": 1}),
        time_limit_min=90,
    )
    client = login(env, "alice")
    zh = client.get(f"/jobs/{job}", headers=ZH).get_data(as_text=True)
    assert "项目的卡配额已用满。" in zh
    assert "等待本项目其他作业结束，或请项目管理员提高配额。" in zh
    assert '<code class="code">AssocGrpGRES</code>' in zh
    assert 'data-state="PENDING"' in zh
    assert ">排队中</span>" in zh
    assert "8 个 GPU 分片（合 1/4 张卡）" in zh
    assert "内存 4 GiB" in zh
    assert "1 小时 30 分" in zh  # the time limit
    en = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert "The project&#39;s card quota is used up." in en
    assert "8 GPU shards (1/4 of a card)" in en
    assert "None" not in en


def test_a_running_job_has_no_end_yet_and_a_finished_one_its_true_end(env: Env) -> None:
    running = env.slurm.add_job(
        "alice",
        "nlp",
        reason="None",
        start_time=START,
        end_time=START + timedelta(hours=2),  # Slurm's: start + time limit
        tres_alloc=Tres({"gres/gpu": 2, "gres/gpu:a100": 2}),
    )
    client = login(env, "alice")
    page = client.get(f"/jobs/{running}").get_data(as_text=True)
    assert "Runs at most until" in page
    assert "it has not ended" in page
    assert 'id="reason"' not in page  # "None" is no reason
    assert "2 whole GPUs a100" in page
    done = env.slurm.add_job(
        "alice",
        "nlp",
        JobState.FAILED,
        reason="NonZeroExitCode",
        start_time=START,
        end_time=START + timedelta(minutes=5),
        exit_code=3,
    )
    page = client.get(f"/jobs/{done}", headers=ZH).get_data(as_text=True)
    assert "最晚运行至" not in page
    assert '<td id="exit-code">3</td>' in page
    assert "5 分钟" in page  # run time: end - start
    assert "以非零退出码结束。" in page


def test_the_policy_daemons_reasons_show_in_words(env: Env, tmp_path: Path) -> None:
    job = env.slurm.add_job("alice", "nlp", JobState.PENDING, reason="JobHeldAdmin")
    log = {str(job): {"at": 1.0, "reasons": ["gang g7: 2 of 4 members queued"]}}
    (tmp_path / "reasons.json").write_text(json.dumps(log))
    env.app.config["POLICY_STATE_DIR"] = str(tmp_path)
    try:
        page = login(env, "alice").get(f"/jobs/{job}", headers=ZH).get_data(as_text=True)
    finally:
        env.app.config["POLICY_STATE_DIR"] = None
    assert "成组调度组 g7：挂起，直到全部 4 个成员都已排队（目前 2 个）。" in page
    assert "JobHeldAdmin" in page


def test_the_decision_log_is_read_once_while_it_is_unchanged(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurm_plugins import policy

    reads: list[Path] = []
    real = policy.decisions
    monkeypatch.setattr(policy, "decisions", lambda d: reads.append(d) or real(d))
    jobs = [env.slurm.add_job("alice", "nlp", JobState.PENDING) for _ in range(2)]
    log = {str(j): {"at": 1.0, "reasons": [f"capacity: job {j} waits"]} for j in jobs}
    (tmp_path / "reasons.json").write_text(json.dumps(log))
    monkeypatch.setitem(env.app.config, "POLICY_STATE_DIR", str(tmp_path))
    client = login(env, "alice")
    for j in [*jobs, *jobs]:
        assert f"Capacity guarantee: job {j} waits" in client.get(f"/jobs/{j}").get_data(
            as_text=True
        )
    assert len(reads) == 1
    log[str(jobs[0])]["reasons"] = ["capacity: now longer"]
    (tmp_path / "reasons.json").write_text(json.dumps(log))
    assert "now longer" in client.get(f"/jobs/{jobs[0]}").get_data(as_text=True)
    assert len(reads) == 2


def test_the_log_tail_refreshes_for_its_owner_only(
    env: Env, tmp_path: Path, users_own_files: None
) -> None:
    out = tmp_path / "slurm.out"
    out.write_text("step 1\nprogress: 40%\n")
    job = env.slurm.add_job("alice", "nlp", stdout_path=str(out))
    page = login(env, "alice").get(f"/jobs/{job}").get_data(as_text=True)
    assert 'data-output-url="/api/v1/jobs/' in page
    assert '<noscript><meta http-equiv="refresh"' in page
    assert 'src="/static/jobs.js"' in page
    assert '<progress id="progress-bar" max="100" value="40.0">' in page
    r = env.api("alice").get(f"/api/v1/jobs/{job}/output")
    assert r.json == {
        "job_id": job,
        "state": "RUNNING",
        "label": "Running",
        "active": True,
        "tail": "step 1\nprogress: 40%",
        "progress": 40.0,
    }
    shown = env.api("gina").get(f"/api/v1/jobs/{job}/output", headers=ZH).json  # a reader
    assert (shown["tail"], shown["label"]) == (None, "运行中")
    assert env.api("bob").get(f"/api/v1/jobs/{job}/output").status_code == 404


def test_cancel_asks_first_and_works_without_javascript(env: Env) -> None:
    job = env.slurm.add_job("alice", "nlp", tres_alloc=Tres({"gres/shard": 16}))
    client = login(env, "alice")
    detail = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert f'href="/jobs/{job}/cancel"' in detail
    confirm = client.get(f"/jobs/{job}/cancel", headers=ZH).get_data(as_text=True)
    assert f"取消作业 {job}？" in confirm
    assert "16 个 GPU 分片（合 1/2 张卡）" in confirm
    assert "是的，取消作业" in confirm
    assert env.slurm.cancelled == []  # asking is not cancelling
    assert client.post(f"/jobs/{job}/cancel").status_code == 400  # no CSRF token
    r = client.post(f"/jobs/{job}/cancel", data={"csrf_token": csrf_of(confirm)})
    assert r.status_code == 302
    assert env.slurm.cancelled == [("alice", job)]
    again = client.get(f"/jobs/{job}/cancel")
    assert again.status_code == 302  # ended: back to the job's page


@pytest.mark.parametrize(("who", "status"), [("gina", 403), ("bob", 404), ("carol", 404)])
def test_the_confirmation_is_refused_to_who_may_not_cancel(env: Env, who: str, status: int) -> None:
    job = env.slurm.add_job("alice", "nlp")
    client = login(env, who)
    assert client.get(f"/jobs/{job}/cancel").status_code == status
    assert f'href="/jobs/{job}/cancel"' not in client.get(f"/jobs/{job}").get_data(as_text=True)


def test_a_manager_confirms_the_cancel_of_a_members_job(env: Env) -> None:
    job = env.slurm.add_job("dave", "cs101")
    client = login(env, "carol")
    confirm = client.get(f"/jobs/{job}/cancel").get_data(as_text=True)
    r = client.post(f"/jobs/{job}/cancel", data={"csrf_token": csrf_of(confirm)})
    assert r.status_code == 302
    assert env.slurm.cancelled == [(None, job)]


def test_history_rows_have_state_end_resources_and_links(env: Env) -> None:
    body = {
        "project_id": env.world.projects["nlp"],
        "name": "train",
        "time_limit": 30,
        "script": "#!/bin/bash\ntrue\n",
        "shards": 8,
    }
    first = env.api("alice").post("/api/v1/jobs", json=body).json["job_id"]
    env.slurm.set_state(first, JobState.COMPLETED)
    again = env.api("alice").post(f"/api/v1/jobs/{first}/rerun").json["job_id"]
    page = login(env, "alice").get("/jobs/history", headers=ZH).get_data(as_text=True)
    assert f'<a href="/jobs/{first}">{first}</a></td></tr>' not in page
    assert f'<td><a href="/jobs/{first}">{first}</a></td>\n  </tr>' in page  # re-run of: a link
    assert 'data-state="COMPLETED"' in page
    assert "已完成" in page
    assert 'data-state="PENDING"' in page
    assert "8 个 GPU 分片（合 1/4 张卡）" in page
    assert f'href="/jobs/{again}"' in page
