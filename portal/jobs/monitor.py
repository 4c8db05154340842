"""What a job tells about itself: utilisation samples from the node agent, Jupyter's address.

Samples are the lines the node agent (``aipool node agent``) appends for the idle reaper,
read from ``SAMPLES_DIR`` with :class:`slurm_plugins.node.SampleReader`, as the daemon reads
them. The Jupyter connection file is the one a spec's Jupyter job writes next to its output
(``jobspec``), shown only to the job's owner: its token opens the notebook server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from jobspec.options import output_path
from jobspec.status import JupyterConnection, connection_path, parse_connection, parse_progress
from portal.authz import Access
from portal.errors import Conflict, Forbidden
from portal.i18n import gettext
from portal.identity.models import User
from portal.jobs.models import JUPYTER, SPEC, JobRecord
from portal.jobs.service import JobView, get_job
from portal.slurm import SlurmPort
from portal.upstream import port_range, upstream
from portal.userfiles import read_tail
from slurm_plugins.client import labels as job_labels
from slurm_plugins.client.models import Job
from slurm_plugins.node import Sample, SampleReader

#: Longest window of samples a caller may ask for (the agent keeps an hour by default).
MAX_WINDOW_S = 7 * 24 * 3600
#: How far the portal's record of a submission may lie from Slurm's submit time (clocks)
SUBMIT_SLACK = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Metrics:
    view: JobView
    window_s: int
    samples: tuple[Sample, ...]


def job_metrics(
    session: Session,
    access: Access,
    port: SlurmPort,
    job_id: int,
    *,
    window_s: int,
    clock: Callable[[], float],
) -> Metrics:
    """GPU/NPU utilisation samples of a job the caller may see, over the last ``window_s``."""
    view = get_job(session, access, port, job_id)
    directory = current_app.config["SAMPLES_DIR"]
    samples: tuple[Sample, ...] = ()
    if directory:
        reader = SampleReader(Path(directory), max_age_s=window_s)
        samples = reader.read(clock(), jobs=[job_id]).get(job_id, ())
    return Metrics(view, window_s, samples)


def is_jupyter(view: JobView) -> bool:
    """Whether the job says it is a Jupyter job (its label: anyone's ``sbatch`` can say so)."""
    return job_labels.decode(view.job.comment).get("jupyter") == "1"


def launched(session: Session, job: Job) -> bool:
    """Whether the portal itself submitted ``job`` as a Jupyter job for the job's user: its
    history row says so, written at the job's submission."""
    record = record_of(session, job)
    return record is not None and record.app == JUPYTER


def record_of(session: Session, job: Job) -> JobRecord | None:
    """The portal's history row of ``job``, if the portal submitted it for the job's user (job
    ids start again when a cluster is rebuilt, so a row of an earlier job with the same id,
    submitted at another time, does not count)."""
    if job.submit_time is None:
        return None
    rows = session.scalars(
        select(JobRecord)
        .join(User, User.id == JobRecord.user_id)
        .where(JobRecord.job_id == job.job_id, User.username == job.user)
    )
    submitted = _utc(job.submit_time)
    return next((r for r in rows if abs(_utc(r.submitted_at) - submitted) <= SUBMIT_SLACK), None)


def _utc(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def jupyter(
    session: Session, access: Access, port: SlurmPort, job_id: int
) -> JupyterConnection | None:
    """The notebook server's address and token for the job's owner; ``None`` until the job
    has started it. Others who may see the job are refused: the token is the owner's key.
    Only a Jupyter job the portal started has one (a job that merely carries the label is
    refused)."""
    view = get_job(session, access, port, job_id)
    if view.job.user != access.username:
        raise Forbidden(gettext("Only the job's owner sees its Jupyter token."))
    if not is_jupyter(view) or not launched(session, view.job):
        raise Conflict(gettext("Job %(id)d is not a Jupyter job.", id=job_id))
    return connection(session, port, view)


def connection(session: Session, port: SlurmPort, view: JobView) -> JupyterConnection | None:
    """The connection to a running Jupyter job's server, if the portal started the job and
    the connection file the job wrote is well-formed; the caller has checked that the caller
    owns the job. Of the file (which the job's user writes) only the port and the token are
    taken: the port only inside ``PROXY_PORT_RANGE``, the base URL only as the portal gave it;
    the host is the address Slurm has for the job's node (:mod:`portal.upstream`)."""
    job, out = view.job, view.job.stdout_file
    if not out.startswith("/") or not job.state.is_active or not launched(session, job):
        return None
    text = read_tail(connection_path(Path(out).parent, job.job_id), job.user, 4096)
    conn = parse_connection(text) if text is not None else None
    base = f"/jupyter/{job.job_id}/"
    if conn is None or conn.job_id != job.job_id or conn.base_url != base:
        return None
    ports = port_range(current_app.config["PROXY_PORT_RANGE"])
    address = upstream(job, port.nodes(), conn.port, ports)
    if address is None:
        return None
    host = urlsplit(address).hostname or ""
    return replace(conn, host=host, url=f"{address}{base}?token={conn.token}")


def recorded_output(session: Session, job: Job) -> str:
    """Where a job the portal submitted writes its output, from its history row: for an ended
    job whose accounting keeps no output path (Slurm 22.05's ``sacct``). The path the portal
    gave Slurm, in the job's working directory as the accounting database remembers it: the
    form's ``JOB_OUTPUT``, or a spec's ``<name>-%j.out`` in its ``outputs:`` or ``workdir:``
    (:func:`jobspec.options.output_path`). "" when the portal did not submit the job."""
    record = record_of(session, job)
    if record is None:
        return ""
    asked = record.request if isinstance(record.request, dict) else {}
    if record.kind == SPEC:
        name, where = asked.get("name"), asked.get("outputs") or asked.get("workdir")
        if not isinstance(name, str) or not isinstance(where, str | None):
            return ""
        pattern = output_path(where, name)
    else:
        pattern = str(current_app.config["JOB_OUTPUT"])
    return replace(job, stdout_path=pattern).stdout_file


@dataclass(frozen=True, slots=True)
class Output:
    """The end of a job's output file and the last progress it printed (``jobspec``)."""

    tail: str
    progress: float | None


def output(session: Session, view: JobView, access: Access, *, lines: int = 40) -> Output | None:
    """Its owner (and platform admins) read a job's output, running or ended; None for others,
    or when the file is not there (yet), is a link, or is not the job's user's."""
    job = view.job
    if not (job.user == access.username or access.platform_admin):
        return None
    out = job.stdout_file or recorded_output(session, job)
    if not out.startswith("/"):
        return None
    text = read_tail(out, job.user)
    if text is None:
        return None
    return Output("\n".join(text.splitlines()[-lines:]), parse_progress(text))
