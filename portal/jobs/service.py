"""Jobs: submitted through slurmrestd as the caller, listed and cancelled per permission."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

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
from portal.jobs import mounts, queue
from portal.jobs.models import FORM, SPEC, JobRecord
from portal.jobs.specs import cluster_config, spec_job
from portal.slurm import SlurmPort
from portal.tenancy.models import Project
from portal.tenancy.service import get_project
from slurm_plugins.admission import HOOK_FILE
from slurm_plugins.admission.explain import explain
from slurm_plugins.client import SubmitRejected
from slurm_plugins.client.errors import AuthenticationError, SlurmError
from slurm_plugins.client.models import Job

GRES_KINDS = ("gpus", "shards", "npus")
_GRES_NAME = {"gpus": "gpu", "shards": "shard", "npus": "npu"}


@dataclass(frozen=True, slots=True)
class JobView:
    job: Job
    project_id: int | None


def _slurm_call(what: str, exc: SlurmError) -> Exception:
    if isinstance(exc, SubmitRejected):
        return Conflict(f"Slurm refused the job: {exc}")
    if isinstance(exc, AuthenticationError):
        return SlurmUnavailable(f"slurmrestd refused the portal's token: {exc}")
    return SlurmUnavailable(f"{what}: {exc}")


def _refusal(user: str, props: Mapping[str, Any], exc: SubmitRejected) -> str:
    """Why Slurm refused: the admission hook's own words where slurmrestd lost them."""
    directory = current_app.config.get("ADMISSION_DIR")
    said = explain(Path(directory) / HOOK_FILE, user, props) if directory else []
    return "; ".join(said) or str(exc)


def _check_request(project: Project, data: Mapping[str, Any]) -> None:
    asked = [k for k in GRES_KINDS if data.get(k)]
    if len(asked) > 1:
        raise ValidationFailed(
            {k: ["ask for one kind of device: gpus, shards or npus"] for k in asked}
        )
    script = data["script"]
    limit = current_app.config["JOB_SCRIPT_MAX_BYTES"]
    if not script.startswith("#!"):
        raise ValidationFailed({"script": ["a batch script starts with #! (e.g. #!/bin/bash)"]})
    if "\x00" in script or len(script.encode()) > limit:
        raise ValidationFailed({"script": [f"text without NUL, at most {limit} bytes"]})
    if data.get("qos") and data["qos"] not in project.qos_list():
        raise ValidationFailed({"qos": [f"one of {', '.join(project.qos_list())}"]})
    nodes = data.get("nodes") or 1
    _check_quota(project, {k: (data.get(k) or 0) * nodes for k in (*GRES_KINDS, "cpus")})


def _check_quota(project: Project, wanted: Mapping[str, int]) -> None:
    """A request that its project's or domain's limit can never hold is refused here."""
    for kind, want in wanted.items():
        for owner in (project, project.domain):
            limit_ = getattr(owner, kind)
            if limit_ is not None and want > limit_:
                raise QuotaExceeded(f"{kind}: {want} asked, the quota of {owner.name} is {limit_}")


def _gres_wanted(props: Mapping[str, Any]) -> dict[str, int]:
    """Devices a job asks for in all, from ``gres`` (per node) and ``nodes``."""
    kind, _, count = str(props.get("gres", "")).partition(":")
    count = count.rpartition(":")[2]
    by_name = {v: k for k, v in _GRES_NAME.items()}
    if kind not in by_name or not count.isdigit():
        return {}
    return {by_name[kind]: int(count) * int(props.get("nodes") or 1)}


def job_workdir(user: str) -> str:
    """Where ``user``'s portal jobs run and write their output: their own directory."""
    configured = current_app.config["JOB_WORKDIR"]
    if configured:
        return str(configured).replace("{user}", user)
    return str(userdirs.user_dir(user_root(), user, current_app.config["SERVICE_GROUP"]))


def user_root() -> Path:
    configured = current_app.config["USER_DIRS"]
    return Path(configured) if configured else Path(current_app.instance_path) / "users"


def job_properties(project: Project, user: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """slurmrestd v0.0.38 job properties for a form submission."""
    cfg = current_app.config
    workdir = job_workdir(user)
    props: dict[str, Any] = {
        "name": data["name"],
        "account": project.name,
        "time_limit": data["time_limit"],
        "current_working_directory": workdir,
        "standard_output": f"{workdir}/{cfg['JOB_OUTPUT']}",
        "environment": {"PATH": "/usr/local/bin:/usr/bin:/bin"},
    }
    for key, prop in (
        ("partition", "partition"),
        ("qos", "qos"),
        ("nodes", "nodes"),
        ("cpus", "cpus_per_task"),
        ("memory_mb", "memory_per_node"),
    ):
        if data.get(key):
            props[prop] = data[key]
    for kind in GRES_KINDS:
        if data.get(kind):
            typed = f":{data['gres_type']}" if data.get("gres_type") else ""
            props["gres"] = f"{_GRES_NAME[kind]}{typed}:{data[kind]}"
    return props


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
    props = job_properties(project, access.username, data)
    request = {k: v for k, v in data.items() if k != "project_id"}
    return _submit(
        session,
        access,
        port,
        project,
        script=data["script"],
        props=props,
        history=JobRecord(kind=FORM, request=request, rerun_of=rerun_of),
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
    script, props = spec_job(spec, cluster_config())
    mounts.check(session, access, spec, cluster_config())
    if props.get("account", project.name) != project.name:
        raise ValidationFailed({"spec": [f"project: the job is charged to {project.name}"]})
    if props.get("qos") and props["qos"] not in project.qos_list():
        raise ValidationFailed(
            {
                "spec": [
                    f"priority: QOS {props['qos']} is not open to "
                    f"{project.name} ({', '.join(project.qos_list())})"
                ]
            }
        )
    _check_quota(project, _gres_wanted(props))
    workdir = job_workdir(access.username)
    props["account"] = project.name
    props.setdefault("current_working_directory", workdir)
    props["environment"] = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    return _submit(
        session,
        access,
        port,
        project,
        script=script,
        props=props,
        history=JobRecord(kind=SPEC, request=dict(spec), rerun_of=rerun_of),
    )


def _submit(
    session: Session,
    access: Access,
    port: SlurmPort,
    project: Project,
    *,
    script: str,
    props: Mapping[str, Any],
    history: JobRecord,
) -> int:
    """Submit as the caller; the job's history row and audit event commit together."""
    try:
        job_id = port.submit_as(access.username, script, props)
    except SubmitRejected as exc:
        raise Conflict(f"Slurm refused the job: {_refusal(access.username, props, exc)}") from exc
    except SlurmError as exc:
        raise _slurm_call("submit", exc) from exc
    history.job_id, history.name = job_id, str(props.get("name", ""))[:64]
    history.user_id, history.project_id = access.user_id, project.id
    session.add(history)
    shown = {k: v for k, v in props.items() if k != "environment"}
    if history.rerun_of is not None:
        shown["rerun_of"] = history.rerun_of
    record(
        session, access.user, "job.submit", "job", job_id, after=shown, domain_id=project.domain_id
    )
    session.commit()
    return job_id


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
        raise NotFound("job not found")
    return JobView(job, project.id if project else None)


def cancel(session: Session, access: Access, port: SlurmPort, job_id: int) -> JobView:
    """Own jobs are cancelled as the caller; others' need ``jobs.cancel_all`` on the project
    and are cancelled by the portal's Slurm client, recorded in the audit log."""
    view = get_job(session, access, port, job_id)
    job = view.job
    if not job.state.is_active:
        raise Conflict(f"job {job_id} is {job.state.value}")
    project = session.get(Project, view.project_id) if view.project_id else None
    own = job.user == access.username
    if (
        not own
        and not access.platform_admin
        and (project is None or Perm.JOBS_CANCEL_ALL not in access.on_project(project))
    ):
        raise Forbidden("jobs.cancel_all needed to cancel others' jobs")
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
