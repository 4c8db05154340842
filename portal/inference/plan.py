"""The inference reconciler's decisions: from a frozen snapshot of one service (its rows and
what Slurm and its replicas' files report), the steps that bring its replica jobs in line with
what it asks for, each with its reason. Pure: no database, no Slurm, no files, no clock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from portal.inference.models import ServiceState
from slurm_plugins.client.models import Job, JobState

BACKOFF_BASE = timedelta(seconds=10)
BACKOFF_CAP = timedelta(minutes=10)


def backoff(failures: int) -> timedelta:
    """How long a replica that failed ``failures`` times in a row waits before its next start:
    10 s, 20 s, 40 s … at most 10 min."""
    wait: timedelta = BACKOFF_BASE * (2 ** max(0, min(failures, 20) - 1))
    return min(wait, BACKOFF_CAP)


def job_name(service_id: int, index: int, tag: str) -> str:
    return f"svc-{service_id}-r{index}-{tag}"


@dataclass(frozen=True, slots=True)
class ReplicaRow:
    index: int
    job_id: int | None
    url: str | None
    failures: int
    retry_at: datetime | None


@dataclass(frozen=True, slots=True)
class Seen:
    """A replica's job as Slurm and the job's own files report it."""

    job: Job | None = None  # None: Slurm knows no such job
    url: str | None = None  # where it listens, once its connection file and Slurm agree
    tail: str = ""  # the end of its output, once it ended


@dataclass(frozen=True, slots=True)
class ServiceView:
    id: int
    state: str
    replicas: int
    expires_at: datetime | None
    tag: str
    encrypted: bool
    model_copy: bool  # the model's files are staged in the service's directory
    rows: tuple[ReplicaRow, ...]
    seen: Mapping[int, Seen] = field(default_factory=dict)  # by replica index


class Do(StrEnum):
    EXPIRE = "expire"
    RETIRE = "retire"  # cancel the replica's job if it still runs, forget the replica
    STAGE = "stage model"
    UNSTAGE = "drop model"
    FAILED = "record failure"
    SUBMIT = "submit"
    READY = "ready"
    LOST = "not ready"  # its address is no longer known
    REMOVE = "remove"  # a deleted service: its directory, then its row


@dataclass(frozen=True, slots=True)
class Step:
    do: Do
    service_id: int
    index: int | None = None
    job_id: int | None = None
    url: str | None = None
    reason: str = ""

    def line(self) -> str:
        what = f"{self.do} replica {self.index}" if self.index is not None else str(self.do)
        job = f" (job {self.job_id})" if self.job_id is not None else ""
        return f"service {self.service_id}: {what}{job}: {self.reason}"


def plan(view: ServiceView, now: datetime) -> list[Step]:
    """What to do so the service's replicas are what it asks for, in order."""
    steps: list[Step] = []
    state = view.state
    if state == ServiceState.RUNNING and view.expires_at is not None and view.expires_at <= now:
        expiry = f"{view.expires_at:%Y-%m-%d %H:%M} UTC"
        steps.append(Step(Do.EXPIRE, view.id, reason=f"its expiry ({expiry}) has passed"))
        state = ServiceState.EXPIRED.value
    want = view.replicas if state == ServiceState.RUNNING else 0
    kept: dict[int, ReplicaRow] = {}
    for row in view.rows:
        job = view.seen[row.index].job if row.index in view.seen else None
        why = _retire_reason(view, state, want, row, job)
        if why:
            active = job is not None and job.state.is_active
            steps.append(
                Step(
                    Do.RETIRE, view.id, row.index, job_id=row.job_id if active else None, reason=why
                )
            )
        else:
            kept[row.index] = row
    if state == ServiceState.DELETING:
        steps.append(Step(Do.REMOVE, view.id, reason="the service was deleted"))
        return steps
    if want and not view.model_copy:
        steps.append(Step(Do.STAGE, view.id, reason="its replicas read the model's files"))
    elif not want and view.encrypted and view.model_copy:
        why = f"the service is {state}: no decrypted copy while no replica runs"
        steps.append(Step(Do.UNSTAGE, view.id, reason=why))
    for index in range(want):
        steps.extend(_replica(view, index, kept.get(index), now))
    return steps


def _retire_reason(
    view: ServiceView, state: str, want: int, row: ReplicaRow, job: Job | None
) -> str:
    if state == ServiceState.DELETING:
        return "the service was deleted"
    if row.index >= want:
        return f"the service is {state}" if want == 0 else f"the service wants {want} replica(s)"
    if job is not None and job.name != job_name(view.id, row.index, view.tag):
        return f"the service's device is now {view.tag}"
    return ""


def _replica(view: ServiceView, index: int, row: ReplicaRow | None, now: datetime) -> list[Step]:
    if row is None:
        return [Step(Do.SUBMIT, view.id, index, reason="a new replica")]
    seen = view.seen.get(index, Seen())
    job = seen.job
    if job is not None and job.state.is_finished:
        return [Step(Do.FAILED, view.id, index, job_id=row.job_id, reason=_failure(job, seen))]
    if row.job_id is None:
        if row.retry_at is not None and now < row.retry_at:
            return []  # backing off after a failure
        again = f"restart after {row.failures} failure(s) in a row"
        return [Step(Do.SUBMIT, view.id, index, reason=again if row.failures else "start")]
    if job is None or job.state is not JobState.RUNNING or seen.url == row.url:
        return []
    # a running replica's address is read again on every look: a replica that moved (its
    # server restarted on another port, its node's address changed) is followed, one whose
    # connection file no longer names its job is no longer called
    if seen.url is None:
        why = f"its connection file no longer gives {row.url}"
        return [Step(Do.LOST, view.id, index, job_id=row.job_id, reason=why)]
    why = seen.url if row.url is None else f"it moved from {row.url} to {seen.url}"
    return [Step(Do.READY, view.id, index, job_id=row.job_id, url=seen.url, reason=why)]


def _failure(job: Job, seen: Seen) -> str:
    code = f", exit code {job.exit_code}" if job.exit_code is not None else ""
    return f"job {job.job_id} {job.state.value}{code}: {seen.tail or 'no output'}"[:1000]
