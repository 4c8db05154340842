"""The registry runs refresher: a fine-tuning job that ended becomes its version's files (or a
failed version), an evaluation job that ended its metrics (or why it failed), and the run's
directory goes (through the root helper). Snapshot → plan → apply, run by the portal's control
daemon (:mod:`portal.control.daemon`); requests only read what it records.

A finished job's files are read as the job's user left them: opened without following links,
owner-checked and size-capped (:mod:`portal.userfiles`), so a job cannot make the portal read
or copy a file of someone else's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from portal import userdirs
from portal.control.book import JobBook
from portal.errors import Conflict, ValidationFailed
from portal.models import utcnow
from portal.registry import reports, storage, words
from portal.registry.models import EvalState, Evaluation, ModelVersion, VersionStatus
from portal.registry.runs import IMAGE_MAX_BYTES, REPORT_MAX_BYTES
from portal.registry.service import protect
from portal.registry.workdirs import log_tail
from portal.userfiles import read_file
from slurm_plugins.client.models import Job, JobState


class Kind(StrEnum):
    VERSION = "version"  # a fine-tuning run: the version it makes
    EVALUATION = "evaluation"


@dataclass(frozen=True, slots=True)
class Run:
    kind: Kind
    id: int
    job_id: int


@dataclass(frozen=True, slots=True)
class Finish:
    run: Run
    job: Job

    def line(self) -> str:
        return (
            f"{self.run.kind} {self.run.id}: job {self.job.job_id} {self.job.state.value}: "
            "record its results"
        )


def in_progress(session: Session) -> list[Run]:
    """The snapshot's rows: versions in training and evaluations queued, with their jobs."""
    versions = session.execute(
        select(ModelVersion.id, ModelVersion.job_id).where(
            ModelVersion.status == VersionStatus.TRAINING.value, ModelVersion.job_id.is_not(None)
        )
    )
    evaluations = session.execute(
        select(Evaluation.id, Evaluation.job_id).where(
            Evaluation.state == EvalState.QUEUED.value, Evaluation.job_id.is_not(None)
        )
    )
    found = [(Kind.VERSION, i, j) for i, j in versions]
    found += [(Kind.EVALUATION, i, j) for i, j in evaluations]
    return [Run(kind, i, j) for kind, i, j in found if j is not None]


def plan(runs: Sequence[Run], jobs: Mapping[int, Job | None]) -> list[Finish]:
    """The runs whose job has ended (pure); a job Slurm does not know is looked at again."""
    out = []
    for run in runs:
        job = jobs.get(run.job_id)
        if job is not None and job.state.is_finished:
            out.append(Finish(run, job))
    return out


def apply(session: Session, step: Finish) -> bool:
    """Record one finished run (if still in progress: the row is read again); True if done."""
    if step.run.kind is Kind.VERSION:
        version = session.get(ModelVersion, step.run.id)
        if version is None or version.status != VersionStatus.TRAINING:
            return False
        finish_version(session, version, step.job)
    else:
        row = session.get(Evaluation, step.run.id)
        if row is None or row.state != EvalState.QUEUED:
            return False
        finish_evaluation(session, row, step.job)
    return True


def refresh(session: Session, book: JobBook, *, dry_run: bool = False) -> list[str]:
    """One pass: snapshot, plan, apply (only the plan with ``dry_run``)."""
    runs = in_progress(session)
    steps = plan(runs, {r.job_id: book.job(r.job_id) for r in runs})
    if dry_run:
        return [f"would {s.line()}" for s in steps]
    return [s.line() for s in steps if apply(session, s)]


def finish_version(session: Session, version: ModelVersion, job: Job) -> None:
    """A training version whose job has ended becomes ready (its files checked in) or failed."""
    workdir = Path(version.workdir)
    done = read_file(workdir / "result.json", job.user, REPORT_MAX_BYTES) is not None
    if job.state is JobState.COMPLETED and done:
        try:
            staged = storage.stage_job_output(workdir / "model", job.user)
        except (Conflict, ValidationFailed) as exc:
            version.status = VersionStatus.FAILED.value
            version.tags = {**version.tags, "error": str(exc)[:200]}
        else:
            final = storage.version_dir(version.model_id, version.number)
            storage.place(staged, final)
            version.files, version.size_bytes = staged.files, staged.size
            version.parameters, version.sha256 = staged.parameters, staged.sha256
            version.storage = f"{version.model_id}/{version.number}"
            version.status = VersionStatus.READY.value
            protect(session, version.model)
    else:
        version.status = VersionStatus.FAILED.value
        why = words.job_end(version.job_id, job.state.value, job.exit_code, "")
        version.tags = {**version.tags, "error": why[:256]}
    session.commit()
    userdirs.remove_run(workdir)


def keep_plots(evaluation_id: int, workdir: Path, owner: str) -> list[str]:
    """The other plots the job drew (``<name>.png`` beside its report, at most
    :data:`reports.MAX_PLOTS`, each a PNG of the job's user), copied into the store."""
    names = sorted(p.name for p in workdir.glob("*.png") if reports.PLOT_NAME.fullmatch(p.name))
    kept = []
    for name in [n for n in names if n != "confusion.png"][: reports.MAX_PLOTS]:
        data = read_file(workdir / name, owner, IMAGE_MAX_BYTES)
        if data is None or not data.startswith(b"\x89PNG\r\n\x1a\n"):
            continue
        target = storage.root() / "evaluations" / str(evaluation_id) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        kept.append(name)
    return kept


def finish_evaluation(session: Session, row: Evaluation, job: Job) -> None:
    """An evaluation whose job has ended: its task's report (:mod:`portal.registry.reports`)
    and, for classification, its confusion plot; or why it failed."""
    state, owner = job.state, job.user
    workdir = Path(row.workdir)
    raw = read_file(workdir / "metrics.json", owner, REPORT_MAX_BYTES)
    report: reports.Report | None = None
    if state is JobState.COMPLETED and raw is not None:
        with contextlib.suppress(ValueError):
            report = reports.parse(json.loads(raw))
    if report is not None:
        row.task = report.task
        row.metrics = report.metrics
        row.per_class = report.per_class
        row.labels = report.labels
        row.confusion = report.confusion
        # the confusion plot is classification's; another task's report has none
        png = report.labels and read_file(workdir / "confusion.png", owner, IMAGE_MAX_BYTES)
        if png:
            target = storage.root() / "evaluations" / f"{row.id}.png"
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(png)
        row.plots = keep_plots(row.id, workdir, owner)
        row.state = EvalState.SUCCEEDED.value
        version = session.get(ModelVersion, row.version_id)
        if version is not None:
            version.metrics = {**row.metrics, "evaluation_id": row.id}
            version.metrics_task = report.task
    else:
        row.state = EvalState.FAILED.value
        # written by the daemon: in the site's language (docs/i18n.md)
        why = log_tail(workdir, owner)
        row.message = words.job_end(row.job_id, state.value, job.exit_code, why)[:1000]
    row.finished_at = utcnow()
    session.commit()
    userdirs.remove_run(workdir)
