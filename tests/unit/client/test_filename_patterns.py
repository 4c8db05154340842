"""Slurm's --output filename patterns, filled in as slurmstepd does for the batch step."""

from __future__ import annotations

from slurm_plugins.client.models import Job, JobState, expand_filename


def _job(**kw: object) -> Job:
    base: dict[str, object] = {
        "job_id": 42,
        "name": "train",
        "user": "dave",
        "state": JobState.RUNNING,
        "account": "cs101",
        "partition": "gpu",
        "qos": "normal",
    }
    return Job(**{**base, **kw})  # type: ignore[arg-type]


def test_the_common_patterns() -> None:
    job = _job(nodes="gpu[1-2]", stdout_path="/tmp/jobs/slurm-%j.out")
    assert job.stdout_file == "/tmp/jobs/slurm-42.out"
    assert expand_filename("%x-%u-%N-%5j-%%.log", job) == "train-dave-gpu-00042-%.log"
    array = _job(job_id=43, array_job_id=40, array_task_id=3)
    assert expand_filename("%A_%a.out", array) == "40_3.out"
    assert expand_filename("%A_%a.out", _job()) == "42_4294967294.out"  # not an array: NO_VAL
    assert expand_filename("plain.out", job) == "plain.out"


def test_a_relative_output_is_in_the_jobs_working_directory() -> None:
    job = _job(stdout_path="train-%j.out", work_dir="/scratch/dave/run1/")
    assert job.stdout_file == "/scratch/dave/run1/train-42.out"
    assert _job(stdout_path="").stdout_file == ""
