"""The inference reconciler: each service's replica jobs brought in line with what its rows
ask for, in the daemon shape snapshot → plan → apply (run by :mod:`portal.control.daemon`).

- :func:`observe` takes the snapshot: the service's rows, Slurm's view of its replica jobs, the
  address each running replica's connection file gives, the log tail of each ended one;
- :func:`plan` decides from that snapshot alone (pure), each step with its reason;
- :func:`apply` is the only writer of replica jobs: it submits and cancels them as the
  service's owner, records failures and addresses, stages and drops the model's copy, and
  removes a deleted service.

A replica whose job ended (a replica never ends by itself: it failed, hit its time limit or
lost its node) is restarted after a backoff (10 s, doubling up to 10 min), its exit code and
log tail kept as its error. A replica job's name carries the service's device
(``svc-7-r0-gpu2``), so a change of device replaces the replicas of the old one. A running
replica's address is read again each time its service is looked at (every full pass): one that
moved is followed, one whose connection file no longer names its job gets no calls. Calls
(``health`` is a GET) only read these rows.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import update
from sqlalchemy.orm import Session

from portal import actas
from portal.authz import Access, load_access
from portal.control.book import JobBook
from portal.errors import Conflict, DomainError, NotFound, SlurmUnavailable
from portal.i18n import gettext
from portal.identity.models import User
from portal.inference.models import Device, InferenceService, Replica, ServiceState
from portal.inference.plan import (
    Do,
    ReplicaRow,
    Seen,
    ServiceView,
    Step,
    backoff,
    job_name,
    plan,
)
from portal.inference.service import replica_key
from portal.jobs import service as jobs
from portal.registry import runs, storage, workdirs
from portal.slurm import SlurmPort
from portal.upstream import PortRange, port_range, upstream
from portal.userfiles import read_file
from slurm_plugins.client.models import Job, JobState


def device_tag(svc: InferenceService) -> str:
    if svc.device == Device.GPU:
        return f"gpu{svc.gpus}"
    if svc.device == Device.FRACTION:
        return f"shard{svc.shards}"
    return "cpu"


# ---------------------------------------------------------------------- snapshot
def observe(svc: InferenceService, book: JobBook) -> ServiceView:
    seen = {}
    for r in svc.replica_rows:
        job = book.job(r.job_id)
        if job is None:
            continue
        running = job.state is JobState.RUNNING
        url = _address(svc, r.index, job, book) if running else None
        ended = job.state.is_finished and bool(svc.workdir)
        tail = workdirs.log_tail(Path(svc.workdir), job.user, 400).strip() if ended else ""
        seen[r.index] = Seen(job, url, tail)
    return ServiceView(
        id=svc.id,
        state=svc.state,
        replicas=svc.replicas,
        expires_at=svc.expires_at,
        tag=device_tag(svc),
        encrypted=svc.version.encrypted,
        model_copy=bool(svc.workdir) and (Path(svc.workdir) / "model").exists(),
        rows=tuple(
            ReplicaRow(r.index, r.job_id, r.url, r.failures, r.retry_at) for r in svc.replica_rows
        ),
        seen=seen,
    )


def _address(svc: InferenceService, index: int, job: Job, book: JobBook) -> str | None:
    """The replica's address: the host from Slurm (the NodeAddr of the job's node), only the
    port from the connection file the job wrote, and only a port of ``PROXY_PORT_RANGE``
    (where no service of the site listens), so a job cannot point the portal elsewhere."""
    if not job.nodes or not svc.workdir:
        return None
    raw = read_file(Path(svc.workdir) / f"replica-{index}.json", job.user, 4096)
    try:
        conn = json.loads(raw or b"")
        port_number = conn["port"]
        written_by = conn.get("job_id")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if written_by != job.job_id:
        return None  # left by an earlier run of this replica
    return upstream(job, book.nodes(), port_number, _ports())


def _ports() -> PortRange:
    return port_range(current_app.config["PROXY_PORT_RANGE"])


# ---------------------------------------------------------------------- apply
def apply(
    session: Session, port: SlurmPort, svc: InferenceService, steps: Sequence[Step], now: datetime
) -> list[str]:
    """Carry the steps out in order, each committed; one line per step done. Slurm not
    answering stops the service's steps there (the next pass starts from what is); Slurm
    refusing a replica is recorded as the replica's failure."""
    done = []
    for step in steps:
        _DO[step.do](session, port, svc, step, now)
        session.commit()
        done.append(step.line())
    return done


def _row(svc: InferenceService, index: int | None) -> Replica | None:
    return next((r for r in svc.replica_rows if r.index == index), None)


def _owner(session: Session, svc: InferenceService) -> Access:
    owner = session.get(User, svc.owner_id)
    if owner is None or not owner.active:
        raise Conflict(gettext("The service's owner is no longer active."))
    return load_access(session, owner)


def _expire(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    # only if still so: a later expiry or a stop recorded since the snapshot wins
    session.execute(
        update(InferenceService)
        .where(
            InferenceService.id == svc.id,
            InferenceService.state == ServiceState.RUNNING.value,
            InferenceService.expires_at <= now,
        )
        .values(state=ServiceState.EXPIRED.value)
    )


def _retire(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    if step.job_id is not None:
        try:
            owner = _owner(session, svc)
        except Conflict:
            port.cancel(step.job_id)  # nobody to act as: the portal's own Slurm rights
        else:
            with contextlib.suppress(Conflict, NotFound):  # it ended meanwhile
                jobs.cancel(session, owner, port, step.job_id)
    row = _row(svc, step.index)
    if row is not None:
        svc.replica_rows.remove(row)


def _stage(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    """The owner's copy of the model, made by the as-the-user agent: it appears whole or not
    at all, and one already there is kept."""
    owner = _owner(session, svc)
    runs.stage_model(svc.version, Path(svc.workdir) / "model", owner.username, keep=True)


def _unstage(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    """The owner's copy gone, removed as the owner (the directory is theirs)."""
    owner = session.get(User, svc.owner_id)
    if owner is not None:
        actas.remove(owner.username, str(Path(svc.workdir) / "model"))


def _failed(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    row = _row(svc, step.index)
    if row is not None:
        row.restarts += 1
        row.failures += 1
        row.retry_at = now + backoff(row.failures)
        row.last_error = step.reason
        row.job_id, row.url = None, None


def _submit(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    if step.index is None:
        return
    row = _row(svc, step.index)
    if row is None:
        row = Replica(index=step.index)
        svc.replica_rows.append(row)
    session.commit()  # nothing of ours waits uncommitted while Slurm is asked
    try:
        spec = replica_spec(svc, step.index, now)
        job_id = jobs.submit_spec(session, _owner(session, svc), port, svc.project_id, spec)
    except SlurmUnavailable:
        raise
    except DomainError as exc:  # refused: quota, QOS, the owner gone: say so, and back off
        session.rollback()
        row = _row(svc, step.index) or row
        row.failures += 1
        row.retry_at = now + backoff(row.failures)
        # outside a request: in the site's language (docs/i18n.md)
        row.last_error = gettext("Could not start: %(reason)s", reason=exc.message)[:1000]
        return
    row = _row(svc, step.index) or row
    row.job_id, row.url = job_id, None


def _ready(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    row = _row(svc, step.index)
    if row is not None and row.job_id == step.job_id:
        row.url = step.url
        row.failures, row.retry_at, row.last_error = 0, None, ""


def _lost(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    row = _row(svc, step.index)
    if row is not None and row.job_id == step.job_id:
        row.url = None  # no call goes to it; a later look that finds its address makes it ready


def _remove(
    session: Session, port: SlurmPort, svc: InferenceService, step: Step, now: datetime
) -> None:
    workdir = svc.workdir
    session.delete(svc)
    session.commit()
    workdirs.remove_workdir(workdir)


_DO = {
    Do.EXPIRE: _expire,
    Do.RETIRE: _retire,
    Do.STAGE: _stage,
    Do.UNSTAGE: _unstage,
    Do.FAILED: _failed,
    Do.SUBMIT: _submit,
    Do.READY: _ready,
    Do.LOST: _lost,
    Do.REMOVE: _remove,
}


def replica_spec(svc: InferenceService, index: int, now: datetime) -> dict[str, Any]:
    """The replica's job spec: the preset's serve template with the service's paths, key and
    device, named after the service, the replica and the device."""
    preset = runs.preset_of(svc.version.model)
    workdir = Path(svc.workdir)
    spec = runs.fill(
        preset.templates(runs.python())["serve"],
        {
            "model": str(workdir / "model"),
            "conn": str(workdir / f"replica-{index}.json"),
            "mirror": str(storage.mirror()),
        },
        workdir,
    )
    spec["name"] = job_name(svc.id, index, device_tag(svc))
    # the replica listens on a port of the range the portal proxies to (portal.presets.runtime)
    spec["env"] = {**spec["env"], "SERVE_KEY": replica_key(svc.id), "SERVE_PORTS": str(_ports())}
    resources: dict[str, Any] = {"cpus": 1, "time": _minutes_left(svc, now)}
    if svc.device == Device.GPU:
        resources["gpus"] = svc.gpus
    elif svc.device == Device.FRACTION:
        resources["gpus"] = f"{svc.shards}/32"
    spec["resources"] = resources
    return spec


def _minutes_left(svc: InferenceService, now: datetime) -> int:
    if svc.expires_at is None:
        return 60
    left = (svc.expires_at - now) / timedelta(minutes=1)
    return max(2, min(24 * 60, int(left) + 1))


# ---------------------------------------------------------------------- one service
def unsettled(svc: InferenceService, now: datetime) -> bool:
    """Whether the service may need a step soon (a pass between full passes looks at these):
    deleted, stopped with replicas left, expired, resized, a replica starting or due to
    restart."""
    rows = svc.replica_rows
    if svc.state == ServiceState.DELETING:
        return True
    if svc.state != ServiceState.RUNNING:
        return bool(rows)
    if svc.expires_at is not None and svc.expires_at <= now:
        return True
    if len(rows) != svc.replicas or any(r.index >= svc.replicas for r in rows):
        return True
    return any(
        r.url is None and (r.job_id is not None or r.retry_at is None or r.retry_at <= now)
        for r in rows
    )


def reconcile(
    session: Session,
    port: SlurmPort,
    book: JobBook,
    service_id: int,
    now: datetime,
    *,
    dry_run: bool = False,
) -> list[str]:
    """One service: snapshot, plan, apply (only the plan with ``dry_run``); lines of what
    was (or would be) done."""
    svc = session.get(InferenceService, service_id)
    if svc is None:
        return []
    steps = plan(observe(svc, book), now)
    if dry_run:
        return [f"would {s.line()}" for s in steps]
    return apply(session, port, svc, steps, now)
