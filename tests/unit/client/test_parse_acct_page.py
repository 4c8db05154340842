"""What an ended job's page needs from sacct: its time limit, its working directory and, where
Slurm keeps it (23.02+), its output file; and names in any script kept as they are."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_plugins.client import parse
from slurm_plugins.client.models import Job

DATA = Path(__file__).parents[2] / "data" / "slurm"


def test_2411_gives_limit_and_the_expanded_output_file() -> None:
    recs = parse.acct_jobs((DATA / "24.11" / "sacct.json").read_text())
    first = recs[0]
    assert first.time_limit_min == 10
    assert first.work_dir == "/tmp/slurmlab/out"
    assert first.stdout_path == "/tmp/slurmlab/out/ok-gpu-1.out"  # stdout_expanded


def test_a_pattern_alone_2302_is_expanded_as_squeue_s_is() -> None:
    doc = json.loads((DATA / "24.11" / "sacct.json").read_text())
    job = doc["jobs"][0]
    del job["stdout_expanded"]  # 23.02 prints the pattern only
    rec = parse.acct_jobs(json.dumps(doc))[0]
    assert rec.stdout_path == "/tmp/slurmlab/out/%x-%j.out"
    as_queue = Job(
        job_id=rec.job_id, name=rec.name, user=rec.user, account=rec.account,
        partition=rec.partition, qos=rec.qos, state=rec.state, work_dir=rec.work_dir,
        stdout_path=rec.stdout_path,
    )  # fmt: skip
    assert as_queue.stdout_file == f"/tmp/slurmlab/out/{rec.name}-{rec.job_id}.out"


def test_2205_keeps_no_output_path_but_the_limit_and_directory() -> None:
    recs = parse.acct_jobs((DATA / "22.05" / "sacct.json").read_text())
    assert all(r.stdout_path == "" for r in recs)
    assert {r.time_limit_min for r in recs} == {None, 525600}
    assert all(r.work_dir.startswith("/") for r in recs)


def test_an_infinite_limit_is_none() -> None:
    doc = json.loads((DATA / "24.11" / "sacct.json").read_text())
    doc["jobs"][0]["time"]["limit"] = {"set": True, "infinite": True, "number": 0}
    assert parse.acct_jobs(json.dumps(doc))[0].time_limit_min is None


def test_names_in_any_script_come_through_as_sacct_prints_them() -> None:
    doc = json.loads((DATA / "22.05" / "sacct.json").read_text())
    doc["jobs"][0]["name"] = "训练-四分之一"
    raw = json.dumps(doc, ensure_ascii=False).encode()
    assert parse.acct_jobs(raw)[0].name == "训练-四分之一"
