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
