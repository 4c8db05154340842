"""Which cards a running job holds, from squeue's ``gres_detail`` on both Slurm families."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_plugins.client import parse
from slurm_plugins.client.models import Job
from slurm_plugins.policy.collect import job_info
from slurm_plugins.policy.snapshot import CardUse

DATA = Path(__file__).parents[2] / "data" / "slurm"


@pytest.fixture(scope="module")
def jobs_2411() -> dict[int, Job]:
    return {j.job_id: j for j in parse.jobs((DATA / "24.11" / "squeue.json").read_text())}


def test_2411_shards_are_read_per_card_from_used_over_total(jobs_2411: dict[int, Job]) -> None:
    assert jobs_2411[7].gres_detail == ("shard:16(0/32,16/32,0/32,0/32)",)
    assert job_info(jobs_2411[7], now=0).cards == (CardUse("node1", 1, 16),)


def test_2411_whole_cards_and_npus_keep_their_index_lists(jobs_2411: dict[int, Job]) -> None:
    assert job_info(jobs_2411[6], now=0).cards == (CardUse("node1", 0, 32),)
    assert job_info(jobs_2411[9], now=0).cards == ()  # NPUs are not shard cards


def test_one_jobs_shards_on_several_cards_count_on_each() -> None:
    detail = {"nodes": "gpu1", "gres_detail": ["shard:40(32/32,8/32,0/32,0/32)"]}
    job = parse.job({**_running(), **detail})
    assert job_info(job, now=0).cards == (CardUse("gpu1", 0, 32), CardUse("gpu1", 1, 8))


def test_2205_shards_name_their_one_card_by_index() -> None:
    job = parse.job({**_running(), "nodes": "gpu1", "gres_detail": ["shard:8(IDX:2)"]})
    assert job_info(job, now=0).cards == (CardUse("gpu1", 2, 8),)


def _running() -> dict[str, object]:
    return {"job_id": 1, "job_state": "RUNNING", "user_name": "alice", "name": "j"}
