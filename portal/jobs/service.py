"""Jobs: submitted through slurmrestd as the caller, listed and cancelled per permission.

A submission is a :class:`~slurm_plugins.client.job.JobRequest`: built here from the form's
fields, or by jobspec from a spec; the portal names no sbatch option or REST property.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, overload

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from jobspec.names import NAME_RULE, is_name
from portal import userdirs
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import (
    Conflict,
    Forbidden,
    NotFound,
    QuotaExceeded,
    SlurmUnavailable,
    ValidationFailed,
)
from portal.i18n import current, gettext
from portal.jobs import mounts, queue
from portal.jobs.explain import state_words
from portal.jobs.models import FORM, JUPYTER, SPEC, JobRecord
from portal.jobs.specs import cluster_config, spec_job
from portal.slurm import SlurmPort
from portal.tenancy.models import Project
from portal.tenancy.service import get_project
from slurm_plugins.admission import HOOK_FILE
from slurm_plugins.admission.explain import explain
from slurm_plugins.client import SubmitRejected
from slurm_plugins.client.errors import AuthenticationError, JobRequestError, SlurmError
from slurm_plugins.client.job import Component, Gres, JobRequest
from slurm_plugins.client.models import Job

GRES_KINDS = ("gpus", "shards", "npus", "mlus", "dcus", "xpus")
_GRES_NAME = {
    "gpus": "gpu",
    "shards": "shard",
    "npus": "npu",
    "mlus": "mlu",
    "dcus": "dcu",
    "xpus": "xpu",
}
#: Kinds a project's quota limits (MLU, DCU and XPU cards have no quota of their own yet).
_QUOTA_KINDS = ("gpus", "shards", "npus")
#: What a portal job starts with: a plain PATH, and the umask Slurm creates its output with
#: (slurmstepd reads SLURM_UMASK): the user and the portal's group, which reads it, nobody else.
#: Each submission adds the reader's language (LANGUAGE_VAR).
JOB_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "SLURM_UMASK": "0027"}
#: The submitter's language, which the admission hook refuses in (and the job may read)
LANGUAGE_VAR = "AIPOOL_LANG"


@dataclass(frozen=True, slots=True)
class JobView:
    job: Job
    project_id: int | None


def _slurm_call(what: str, exc: SlurmError) -> Exception:
    if isinstance(exc, SubmitRejected):
        return Conflict(gettext("Slurm refused the job: %(why)s", why=str(exc)))
    if isinstance(exc, AuthenticationError):
        return SlurmUnavailable(
            gettext("slurmrestd refused the portal's token: %(why)s", why=str(exc))
        )
    return SlurmUnavailable(gettext("Slurm did not answer (%(what)s): %(why)s", what=what, why=exc))


def _refusal(user: str, request: JobRequest, exc: SubmitRejected) -> str:
    """Why Slurm refused: the admission hook's own words where slurmrestd lost them."""
    directory = current_app.config.get("ADMISSION_DIR")
    said = explain(Path(directory) / HOOK_FILE, user, request) if directory else []
    return "; ".join(said) or str(exc)


def _check_request(project: Project, data: Mapping[str, Any]) -> None:
    if not is_name(data.get("name")):  # the pages' form and a re-run reach here without the schema
        raise ValidationFailed({"name": [gettext(NAME_RULE)]})
    asked = [k for k in GRES_KINDS if data.get(k)]
    if len(asked) > 1:
        raise ValidationFailed(
            {
                k: [
                    gettext(
                        "Ask for one kind of device: whole GPUs, shards, NPUs, MLUs, DCUs or XPUs."
                    )
                ]
                for k in asked
            }
        )
    script = data["script"]
    limit = current_app.config["JOB_SCRIPT_MAX_BYTES"]
    if not script.startswith("#!"):
        raise ValidationFailed(
            {"script": [gettext("A batch script starts with #! (e.g. #!/bin/bash).")]}
        )
    if "\x00" in script or len(script.encode()) > limit:
        raise ValidationFailed(
            {"script": [gettext("Text without NUL characters, at most %(n)d bytes.", n=limit)]}
        )
    if data.get("qos") and data["qos"] not in project.qos_list():
        raise ValidationFailed(
            {"qos": [gettext("One of: %(choices)s.", choices=", ".join(project.qos_list()))]}
        )


def _check_quota(project: Project, wanted: Mapping[str, int]) -> None:
    """A request that its project's or domain's limit can never hold is refused here."""
    for kind, want in wanted.items():
        for owner in (project, project.domain):
            limit_ = getattr(owner, kind)
            if limit_ is not None and want > limit_:
                raise QuotaExceeded(
                    gettext(
                        "%(kind)s: %(want)d asked, the quota of %(owner)s is %(limit)d.",
                        kind=kind,
                        want=want,
                        owner=owner.name,
                        limit=limit_,
                    )
                )


def _gres_wanted(request: JobRequest) -> dict[str, int]:
    """Devices a job asks for in all (every component, every node), by quota kind."""
    totals = request.gres_totals()
    return {
        kind: totals[name]
        for kind, name in _GRES_NAME.items()
        if name in totals and kind in _QUOTA_KINDS
    }


def job_workdir(user: str) -> str:
    """Where ``user``'s portal jobs run and write their output: their own directory."""
    configured = current_app.config["JOB_WORKDIR"]
    if configured:
        return str(configured).replace("{user}", user)
    root = userdirs.user_root()
    return str(userdirs.user_dir(root, user, current_app.config["SERVICE_GROUP"]))


def form_request(project: Project, user: str, data: Mapping[str, Any]) -> JobRequest:
    """The job a form submission asks for, charged to ``project``, run in ``user``'s directory."""
    workdir = job_workdir(user)
    try:
        gres = tuple(
            Gres(_GRES_NAME[kind], data[kind], data.get("gres_type") or None)
            for kind in GRES_KINDS
            if data.get(kind)
        )
        part = Component(
            account=project.name,
            partition=data.get("partition") or None,
            qos=data.get("qos") or None,
            time_limit=data["time_limit"],
            nodes=data.get("nodes") or None,
            cpus_per_task=data.get("cpus") or None,
            memory_mb=data.get("memory_mb") or None,
            gres=gres,
        )
        return JobRequest(
            (part,),
            name=data["name"],
            workdir=workdir,
            output=f"{workdir}/{current_app.config['JOB_OUTPUT']}",
            environment=JOB_ENVIRONMENT,
        )
    except JobRequestError as exc:  # the schema checks each field; this is the last word
        raise ValidationFailed({exc.field: [str(exc)]}) from None


def submit(
    session: Session,
    access: Access,
    port: SlurmPort,
    data: Mapping[str, Any],
    *,
    rerun_of: int | None = None,
) -> int:
    """A job from the form fields."""
    project = get_project(session, access, data["project_id"], Perm.JOBS_SUBMIT)
    _check_request(project, data)
    request = form_request(project, access.username, data)
    cpus = (data.get("cpus") or 0) * (data.get("nodes") or 1)
    _check_quota(project, {**_gres_wanted(request), "cpus": cpus})
    asked = {k: v for k, v in data.items() if k != "project_id"}
    return _submit(
        session,
        access,
        port,
        project,
        script=data["script"],
        request=request,
        history=JobRecord(kind=FORM, request=asked, rerun_of=rerun_of),
    )


def submit_spec(
    session: Session,
    access: Access,
    port: SlurmPort,
    project_id: int,
    spec: Mapping[str, Any],
    *,
    rerun_of: int | None = None,
) -> int:
    """A job from a declarative spec, charged to the project whatever the spec names."""
    project = get_project(session, access, project_id, Perm.JOBS_SUBMIT)
    script, request = spec_job(spec, cluster_config(), port)
    mounts.check(session, access, spec, cluster_config())
    for part in request.components:
        if part.account not in (None, project.name):
            raise ValidationFailed(
                {
                    "spec": [
                        gettext("project: the job is charged to %(project)s.", project=project.name)
                    ]
                }
            )
        if part.qos and part.qos not in project.qos_list():
            raise ValidationFailed(
                {
                    "spec": [
                        gettext(
                            "priority: QOS %(qos)s is not open to %(project)s (%(choices)s).",
                            qos=part.qos,
                            project=project.name,
                            choices=", ".join(project.qos_list()),
                        )
                    ]
                }
            )
    _check_quota(project, _gres_wanted(request))
    request = replace(
        request.with_components(account=project.name),
        workdir=request.workdir or job_workdir(access.username),
        environment=JOB_ENVIRONMENT,
    )
    return _submit(
        session,
        access,
        port,
        project,
        script=script,
        request=request,
        history=JobRecord(
            kind=SPEC,
            request=dict(spec),
            rerun_of=rerun_of,
            # rendered by jobspec, not the caller's words: the proxy's proof that we launched it
            app=JUPYTER if request.labels.get("jupyter") == "1" else "",
        ),
    )


def _submit(
    session: Session,
    access: Access,
    port: SlurmPort,
    project: Project,
    *,
    script: str,
    request: JobRequest,
    history: JobRecord,
) -> int:
    """Submit as the caller, in the caller's language (the admission hook refuses in it); the
    job's history row and audit event commit together."""
    if request.environment is not None:
        request = replace(request, environment={**request.environment, LANGUAGE_VAR: current()})
    try:
        job_id = port.submit_as(access.username, script, request)
    except SubmitRejected as exc:
        why = _refusal(access.username, request, exc)
        raise Conflict(gettext("Slurm refused the job: %(why)s", why=why)) from exc
    except JobRequestError as exc:  # a field this slurmrestd cannot carry
        raise ValidationFailed({exc.field: [str(exc)]}) from exc
    except SlurmError as exc:
        raise _slurm_call("submit", exc) from exc
    history.job_id, history.name = job_id, (request.name or "")[:64]
    history.user_id, history.project_id = access.user_id, project.id
    session.add(history)
    shown = submitted(request)
    if history.rerun_of is not None:
        shown["rerun_of"] = history.rerun_of
    record(
        session, access.user, "job.submit", "job", job_id, after=shown, domain_id=project.domain_id
    )
    session.commit()
    return job_id


def submitted(request: JobRequest) -> dict[str, Any]:
    """What the audit log shows of a submission: the REST properties sent, environment left
    out; a heterogeneous job as its list of components."""
    sent = request.to_rest()
    parts = [{k: v for k, v in p.items() if k != "environment"} for p in sent.get("jobs", [])]
    if parts:
        return {"jobs": parts}
    return {k: v for k, v in sent["job"].items() if k != "environment"}


# ---------------------------------------------------------------------- reads
def _project_of(session: Session, account: str) -> Project | None:
    project: Project | None = session.scalar(select(Project).where(Project.name == account))
    return project


def _visible(access: Access, job: Job, project: Project | None) -> bool:
    if access.platform_admin or job.user == access.username:
        return True
    return project is not None and Perm.JOBS_READ_ALL in access.on_project(project)


class JobList(Sequence[JobView]):
    """Visible jobs, newest first; a :class:`JobView` is made only for what is looked at, so
    a page of a 100,000-job queue costs the page, not the queue."""

    def __init__(self, jobs: Sequence[Job], project_ids: Mapping[str, int]) -> None:
        self._jobs = jobs
        self._ids = project_ids

    def __len__(self) -> int:
        return len(self._jobs)

    @overload
    def __getitem__(self, index: int) -> JobView: ...
    @overload
    def __getitem__(self, index: slice) -> list[JobView]: ...
    def __getitem__(self, index: int | slice) -> JobView | list[JobView]:
        if isinstance(index, slice):
            return [JobView(j, self._ids.get(j.account)) for j in self._jobs[index]]
        job = self._jobs[index]
        return JobView(job, self._ids.get(job.account))


def _accounts(session: Session, access: Access) -> tuple[dict[str, int], set[str]]:
    """Project ids by account, and the accounts whose every job the caller may read."""
    rows = session.execute(select(Project.name, Project.id, Project.domain_id)).all()
    ids = {name: pid for name, pid, _ in rows}
    if access.platform_admin:
        return ids, set(ids)
    readable = {
        name
        for name, pid, domain_id in rows
        if domain_id in access.admin_of or Perm.JOBS_READ_ALL in access.grants.get(pid, ())
    }
    return ids, readable


def list_jobs(
    session: Session, access: Access, port: SlurmPort, filters: Mapping[str, Any]
) -> JobList:
    try:
        jobs = port.jobs()
    except SlurmError as exc:
        raise _slurm_call("queue", exc) from exc
    index = queue.index_of(jobs, current_app.extensions)
    ids, readable = _accounts(session, access)
    seen: Sequence[Job]
    if filters.get("project_id"):
        names = {n for n, pid in ids.items() if pid == filters["project_id"]}
        if access.platform_admin:
            seen = index.visible(names, "")
        else:
            seen = [
                j for j in index.visible(readable & names, access.username) if j.account in names
            ]
    elif access.platform_admin:
        seen = index.newest_first
    else:
        seen = index.visible(readable, access.username)
    if filters.get("state"):
        seen = [j for j in seen if j.state.value == filters["state"]]
    if filters.get("user"):
        seen = [j for j in seen if j.user == filters["user"]]
    return JobList(seen, ids)


def get_job(session: Session, access: Access, port: SlurmPort, job_id: int) -> JobView:
    try:
        job = port.job(job_id)
    except SlurmError as exc:
        raise _slurm_call("job", exc) from exc
    project = _project_of(session, job.account) if job else None
    if job is None or not _visible(access, job, project):
        raise NotFound(gettext("No job %(id)d, or not one you may see.", id=job_id))
    return JobView(job, project.id if project else None)


def may_cancel(session: Session, access: Access, view: JobView) -> bool:
    """Own jobs, and others' with ``jobs.cancel_all`` on their project (platform admins: all)."""
    if view.job.user == access.username or access.platform_admin:
        return True
    project = session.get(Project, view.project_id) if view.project_id else None
    return project is not None and Perm.JOBS_CANCEL_ALL in access.on_project(project)


def cancel(session: Session, access: Access, port: SlurmPort, job_id: int) -> JobView:
    """Own jobs are cancelled as the caller; others' need ``jobs.cancel_all`` on the project
    and are cancelled by the portal's Slurm client, recorded in the audit log."""
    view = get_job(session, access, port, job_id)
    job = view.job
    if not job.state.is_cancellable:
        raise Conflict(
            gettext(
                "Job %(id)d has ended (%(state)s).",
                id=job_id,
                state=state_words(job.state, current())[0],
            )
        )
    if not may_cancel(session, access, view):
        raise Forbidden(gettext("Cancelling others' jobs needs the jobs.cancel_all permission."))
    project = session.get(Project, view.project_id) if view.project_id else None
    own = job.user == access.username
    try:
        port.cancel_as(access.username, job_id) if own else port.cancel(job_id)
    except SlurmError as exc:
        raise _slurm_call("cancel", exc) from exc
    record(
        session,
        access.user,
        "job.cancel",
        "job",
        job_id,
        before={"state": job.state.value, "user": job.user, "account": job.account},
        domain_id=project.domain_id if project else None,
    )
    session.commit()
    return view
