"""Small builders of sacct records for the accounting tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from slurm_plugins.client.models import AcctJob, JobState, Tres

T0 = datetime(2026, 11, 2, 10, 30, tzinfo=UTC)


def acct(
    job_id: int,
    tres: str,
    *,
    hours: float = 1.0,
    start: datetime = T0,
    wait_s: int = 60,
    user: str = "alice",
    account: str = "nlp",
    partition: str = "gpu",
    nodes: str = "gpu1",
    state: JobState = JobState.COMPLETED,
    cluster: str = "aipool",
) -> AcctJob:
    elapsed = round(hours * 3600)
    return AcctJob(
        job_id=job_id,
        cluster=cluster,
        name=f"job{job_id}",
        user=user,
        account=account,
        partition=partition,
        qos="normal",
        state=state,
        submit_time=start - timedelta(seconds=wait_s),
        start_time=start,
        end_time=start + timedelta(seconds=elapsed) if state.is_finished else None,
        elapsed_s=elapsed,
        tres_alloc=Tres.parse(tres),
        nodes=nodes,
    )


def d(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def month_jobs() -> list[AcctJob]:
    """The reports' sample month: whole GPUs, shards, an NPU, a job across the month's end."""
    return [
        acct(1, "cpu=2,mem=8G,gres/gpu=2,gres/gpu:a100=2", hours=2, user="alice"),
        acct(2, "cpu=1,mem=2G,gres/shard=8", hours=2, user="alice", wait_s=600),
        acct(
            3,
            "cpu=4,gres/npu=1,gres/npu:910b=1",
            hours=1.5,
            user="bob",
            account="vision",
            partition="npu",
            nodes="npu1",
        ),
        acct(
            4,
            "cpu=1,gres/shard=16",
            hours=4,
            user="carol",
            account="cs101",
            start=d(2026, 11, 30, 22),
        ),
        acct(
            5,
            "cpu=8",
            hours=1,
            user="dave",
            account="cs101",
            partition="cpu",
            nodes="cpu1",
            start=d(2026, 10, 31, 23, 30),
        ),
    ]
