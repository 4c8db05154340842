"""Inference services: a model version served by replica jobs (one Slurm job each, submitted
as the service's owner), reconciled with Slurm on every look, and called through the portal.

Reconciling brings the replicas to what the service asks for: missing or ended replica jobs
are (re)submitted — a replica that failed or hit its time limit is restarted — surplus ones
are cancelled, a stopped or expired service has none. A replica's address is read from the
connection file its job writes once it listens.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
import secrets
import shutil
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from flask import current_app
from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from portal import userdirs
from portal.audit.service import record
from portal.authz import Access, Perm, load_access
from portal.errors import (
    Conflict,
    DomainError,
    Forbidden,
    NotFound,
    Unavailable,
    ValidationFailed,
    envelope,
)
from portal.identity.models import User
from portal.inference.models import Device, InferenceService, Replica, ServiceState
from portal.jobs import service as jobs
from portal.registry import runs, storage
from portal.registry.access import Level, now
from portal.registry.models import VersionStatus
from portal.registry.service import version_by_id
from portal.slurm import SlurmPort
from portal.tenancy.models import Project
from portal.tenancy.service import get_project
from portal.userfiles import read_file
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.models import Job, JobState

MAX_REPLICAS = 8


class Gone(DomainError):
    status = 410
    code = "expired"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def replica_key(service_id: int) -> str:
    """The secret a replica checks on every call, so only the portal reaches it."""
    secret = str(current_app.config["SECRET_KEY"]).encode()
    return hmac.new(secret, b"inference-replica:%d" % service_id, hashlib.sha256).hexdigest()


def _audit(session: Session, access: Access, action: str, svc: InferenceService, **kw: Any) -> None:
    project = session.get(Project, svc.project_id)
    record(
        session,
        access.user,
        action,
        "inference_service",
        svc.id,
        domain_id=project.domain_id if project else None,
        **kw,
    )


def check_ips(values: list[str]) -> list[str]:
    nets = []
    for value in values:
        try:
            nets.append(str(ipaddress.ip_network(value, strict=False)))
        except ValueError:
            raise ValidationFailed(
                {"allow_ips": [f"{value!r} is not an address or CIDR"]}
            ) from None
    return nets


# ---------------------------------------------------------------------- access
def services_query(access: Access, filters: Mapping[str, Any]) -> Select[Any]:
    stmt = select(InferenceService).order_by(InferenceService.id)
    if not access.platform_admin:
        readable = [p for p, perms in access.grants.items() if Perm.PROJECT_READ in perms]
        admin = select(Project.id).where(Project.domain_id.in_(access.admin_of))
        stmt = stmt.where(
            (InferenceService.owner_id == access.user_id)
            | InferenceService.project_id.in_(readable)
            | InferenceService.project_id.in_(admin)
        )
    if filters.get("project_id"):
        stmt = stmt.where(InferenceService.project_id == filters["project_id"])
    return stmt


def get_service(
    session: Session, access: Access, service_id: int, manage: bool = False
) -> InferenceService:
    svc = session.get(InferenceService, service_id)
    project = session.get(Project, svc.project_id) if svc else None
    if svc is None or project is None:
        raise NotFound("inference service not found")
    perms = access.on_project(project)
    owner = svc.owner_id == access.user_id
    if not owner and Perm.PROJECT_READ not in perms and not access.platform_admin:
        raise NotFound("inference service not found")
    if manage and not (owner or Perm.PROJECT_MANAGE in perms or access.platform_admin):
        raise Forbidden("only the service's owner or the project's managers change it")
    return svc


# ---------------------------------------------------------------------- lifecycle
def create(
    session: Session, access: Access, port: SlurmPort, data: Mapping[str, Any]
) -> tuple[InferenceService, str]:
    """One click: a version becomes a service; returns it and its token (shown once)."""
    version = version_by_id(session, access, data["version_id"], Level.READ)
    if version.status in (VersionStatus.TRAINING, VersionStatus.FAILED) or not version.storage:
        raise Conflict(f"version {version.number} is {version.status}: nothing to serve")
    runs.preset_of(version.model)
    project = get_project(
        session, access, data.get("project_id") or version.model.project_id, Perm.JOBS_SUBMIT
    )
    name = data.get("name") or f"{version.model.name}-v{version.number}"
    if session.scalar(
        select(InferenceService.id).where(
            InferenceService.project_id == project.id, InferenceService.name == name
        )
    ):
        raise Conflict(f"project {project.name} already has a service named {name}")
    device, gpus, shards = _device(data)
    token = "svc_" + secrets.token_urlsafe(24)
    workdir = runs.new_workdir(access.username)
    try:
        runs.stage_model(version, workdir / "model")
        svc = InferenceService(
            version_id=version.id,
            project_id=project.id,
            owner_id=access.user_id,
            name=name,
            device=device,
            gpus=gpus,
            shards=shards,
            replicas=data.get("replicas", 1),
            token_hash=_hash(token),
            token_hint=token[:8],
            allow_ips=check_ips(data.get("allow_ips", [])),
            expires_at=data.get("expires_at"),
            workdir=str(workdir),
        )
        if expired_now(svc):
            raise ValidationFailed({"expires_at": ["in the future"]})
        session.add(svc)
        session.flush()
        _audit(session, access, "inference.create", svc, after=svc.audit_view())
        session.commit()
    except BaseException:
        session.rollback()
        userdirs.remove_run(workdir)
        raise
    reconcile(session, port, svc)
    return svc, token


def _device(data: Mapping[str, Any]) -> tuple[str, int, int]:
    device = data.get("device", Device.CPU.value)
    if device == Device.GPU:
        return device, int(data.get("gpus") or 1), 0
    if device == Device.FRACTION:
        shards = int(data.get("shards") or 8)
        if not 1 <= shards <= 31:
            raise ValidationFailed({"shards": ["1-31 (k/32 of a card); 32 is a whole card: gpu"]})
        return device, 0, shards
    return Device.CPU.value, 0, 0


def edit(
    session: Session, access: Access, port: SlurmPort, service_id: int, data: Mapping[str, Any]
) -> InferenceService:
    """Scale (replicas), allow-list, expiry, device (replicas restart on the new device)."""
    svc = get_service(session, access, service_id, manage=True)
    before = svc.audit_view()
    if "replicas" in data:
        svc.replicas = data["replicas"]
    if "allow_ips" in data:
        svc.allow_ips = check_ips(data["allow_ips"])
    if "expires_at" in data:
        if data["expires_at"] is not None and data["expires_at"] <= now():
            raise ValidationFailed({"expires_at": ["in the future (or null: no expiry)"]})
        svc.expires_at = data["expires_at"]
        if svc.state == ServiceState.EXPIRED:
            svc.state = ServiceState.STOPPED.value
    if "device" in data:
        device = _device(data)
        if device != (svc.device, svc.gpus, svc.shards):
            svc.device, svc.gpus, svc.shards = device
            _cancel_replicas(session, port, svc, keep=0)
    _audit(session, access, "inference.update", svc, before=before, after=svc.audit_view())
    session.commit()
    reconcile(session, port, svc)
    return svc


def set_state(
    session: Session, access: Access, port: SlurmPort, service_id: int, state: ServiceState
) -> InferenceService:
    svc = get_service(session, access, service_id, manage=True)
    if state == ServiceState.RUNNING and expired_now(svc):
        raise Conflict("the service has expired: set a later expiry first")
    before = svc.state
    svc.state = state.value
    _audit(
        session,
        access,
        f"inference.{'start' if state == 'running' else 'stop'}",
        svc,
        before={"state": before},
        after={"state": svc.state},
    )
    session.commit()
    reconcile(session, port, svc)
    return svc


def delete(session: Session, access: Access, port: SlurmPort, service_id: int) -> None:
    svc = get_service(session, access, service_id, manage=True)
    _cancel_replicas(session, port, svc, keep=0)
    _audit(session, access, "inference.delete", svc, before=svc.audit_view())
    workdir = svc.workdir
    session.delete(svc)
    session.commit()
    runs.remove_workdir(workdir)


def new_token(session: Session, access: Access, service_id: int) -> str:
    svc = get_service(session, access, service_id, manage=True)
    token = "svc_" + secrets.token_urlsafe(24)
    svc.token_hash, svc.token_hint = _hash(token), token[:8]
    _audit(session, access, "inference.token", svc)
    session.commit()
    return token


# ---------------------------------------------------------------------- reconcile
def _owner_access(session: Session, svc: InferenceService) -> Access:
    owner = session.get(User, svc.owner_id)
    if owner is None or not owner.active:
        raise Conflict("the service's owner is no longer active")
    return load_access(session, owner)


def _spec(svc: InferenceService, replica: Replica) -> dict[str, Any]:
    version = svc.version
    preset = runs.preset_of(version.model)
    workdir = Path(svc.workdir)
    spec = runs.fill(
        preset.templates(runs.python())["serve"],
        {
            "model": str(workdir / "model"),
            "conn": str(workdir / f"replica-{replica.index}.json"),
            "mirror": str(storage.mirror()),
        },
        workdir,
    )
    spec["name"] = f"svc-{svc.id}-r{replica.index}"
    spec["env"] = {**spec["env"], "SERVE_KEY": replica_key(svc.id)}
    resources: dict[str, Any] = {"cpus": 1, "time": _minutes_left(svc)}
    if svc.device == Device.GPU:
        resources["gpus"] = svc.gpus
    elif svc.device == Device.FRACTION:
        resources["gpus"] = f"{svc.shards}/32"
    spec["resources"] = resources
    return spec


def _minutes_left(svc: InferenceService) -> int:
    if svc.expires_at is None:
        return 60
    left = (svc.expires_at - now()) / timedelta(minutes=1)
    return max(2, min(24 * 60, int(left) + 1))


def _cancel_replicas(session: Session, port: SlurmPort, svc: InferenceService, keep: int) -> None:
    surplus = [r for r in svc.replica_rows if r.index >= keep]
    if not surplus:
        return
    owner = _owner_access(session, svc)
    for replica in surplus:
        state = runs.job_state(port, replica.job_id)
        if replica.job_id is not None and state is not None and state.is_active:
            with contextlib.suppress(Conflict, NotFound):  # ended meanwhile
                jobs.cancel(session, owner, port, replica.job_id)
        svc.replica_rows.remove(replica)
    session.flush()


def _read_url(port: SlurmPort, svc: InferenceService, replica: Replica, job: Job) -> str | None:
    """The replica's address: the host from Slurm (the NodeAddr of the job's node), only the
    port from the connection file the job wrote, so a job cannot point the portal elsewhere."""
    path = Path(svc.workdir) / f"replica-{replica.index}.json"
    if not job.nodes:
        return None
    raw = read_file(path, job.user, 4096)  # the job's user's file, never through a link
    try:
        conn = json.loads(raw or b"")
        port_number = int(conn["port"])
    except (ValueError, KeyError, TypeError):
        return None
    if conn.get("job_id") != replica.job_id or not 1024 <= port_number <= 65535:
        return None  # left by an earlier run of this replica, or not a port a job may use
    try:
        nodes = {n.name: n.address or n.name for n in port.nodes()}
    except SlurmError:
        return None
    host = nodes.get(job.nodes)
    return f"http://{host}:{port_number}" if host else None


BACKOFF_BASE = timedelta(seconds=10)
BACKOFF_CAP = timedelta(minutes=10)


def backoff(failures: int) -> timedelta:
    """How long a replica that failed ``failures`` times in a row waits before its next start:
    10 s, 20 s, 40 s … at most 10 min."""
    wait: timedelta = BACKOFF_BASE * (2 ** max(0, min(failures, 20) - 1))
    return min(wait, BACKOFF_CAP)


def _model_copy(svc: InferenceService, *, wanted: bool) -> None:
    """A decrypted copy lives only while replicas may run: a stopped or expired service of an
    encrypted version loses it, and gets it again when it starts."""
    if not svc.workdir:
        return
    model = Path(svc.workdir) / "model"
    if wanted and not model.exists():
        runs.stage_model(svc.version, model)
    elif not wanted and svc.version.encrypted and model.exists():
        shutil.rmtree(model, ignore_errors=True)  # the portal's own files, in the run's directory


def reconcile(
    session: Session,
    port: SlurmPort,
    svc: InferenceService,
    *,
    commit: bool = True,
    at: datetime | None = None,
) -> InferenceService:
    """Bring the service's replicas in line with Slurm: start missing ones, record and back off
    from failed ones (the replica's exit code and log tail kept as its error), stop extras."""
    when = at if at is not None else now()
    if svc.state == ServiceState.RUNNING and expired_now(svc):
        svc.state = ServiceState.EXPIRED.value
    want = svc.replicas if svc.state == ServiceState.RUNNING else 0
    _cancel_replicas(session, port, svc, keep=want)
    _model_copy(svc, wanted=want > 0)
    have = {r.index: r for r in svc.replica_rows}
    for index in range(want):
        replica = have.get(index)
        if replica is None:
            replica = Replica(index=index)
            svc.replica_rows.append(replica)
        job = runs.job_of(port, replica.job_id)
        state = job.state if job is not None else None
        if job is not None and state is not None and state.is_finished:
            _failed(svc, replica, job, when)
        if replica.job_id is None:
            if replica.retry_at is not None and when < replica.retry_at:
                continue  # backing off after a failure
            replica.url = None
            session.flush()
            owner = _owner_access(session, svc)
            replica.job_id = jobs.submit_spec(
                session, owner, port, svc.project_id, _spec(svc, replica)
            )
        elif job is not None and replica.url is None and state is JobState.RUNNING:
            replica.url = _read_url(port, svc, replica, job)
            if replica.url:
                replica.failures, replica.retry_at, replica.last_error = 0, None, ""
    if commit and (session.dirty or session.new or session.deleted):
        session.commit()
    return svc


def _failed(svc: InferenceService, replica: Replica, job: Job, now: datetime) -> None:
    """A replica's job ended (a replica never ends by itself): note why, and back off."""
    replica.restarts += 1
    replica.failures += 1
    replica.retry_at = now + backoff(replica.failures)
    code = f", exit code {job.exit_code}" if job.exit_code is not None else ""
    tail = runs.log_tail(Path(svc.workdir), job.user, 400).strip()
    replica.last_error = f"job {job.job_id} {job.state.value}{code}: {tail or 'no output'}"[:1000]
    replica.job_id, replica.url = None, None


# ---------------------------------------------------------------------- calls
def _http() -> httpx.Client:
    """One client per app (a new client costs an SSL context, ~0.1 s). It keeps no idle
    connections: replicas come and go with their jobs, and a pooled socket to one that has
    gone would only fail the next call (or linger unclosed)."""
    client: httpx.Client | None = current_app.extensions.get("aipool.inference.http")
    if client is None:
        client = httpx.Client(
            timeout=float(current_app.config["INFERENCE_TIMEOUT"]),
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        current_app.extensions["aipool.inference.http"] = client
    return client


def _allowed(svc: InferenceService, remote: str | None) -> bool:
    if not svc.allow_ips:
        return True
    try:
        addr = ipaddress.ip_address(remote or "")
    except ValueError:
        return False
    return any(addr in ipaddress.ip_network(net) for net in svc.allow_ips)


def call(
    session: Session,
    port: SlurmPort,
    service_id: int,
    *,
    token: str | None,
    remote: str | None,
    path: str,
    body: Any,
) -> tuple[int, Any]:
    """A call from a client with the service's token, proxied to a ready replica, counted."""
    svc = session.get(InferenceService, service_id)
    if svc is None or not token or not hmac.compare_digest(svc.token_hash, _hash(token)):
        raise NotFound("inference service not found (or wrong token)")
    if not _allowed(svc, remote):
        raise Forbidden(f"{remote} is not on the service's IP allow-list")
    rows = svc.replica_rows
    settled = svc.state == ServiceState.RUNNING and len(rows) == svc.replicas
    if not settled or expired_now(svc) or not all(r.url for r in rows):
        # Slurm is asked only when something may have changed: a replica starting, one whose
        # last call failed (its URL was dropped), a resize or the expiry
        reconcile(session, port, svc, commit=False)  # committed with the call's counter
    if svc.state == ServiceState.EXPIRED:
        session.commit()
        raise Gone("the service has expired")
    if svc.state != ServiceState.RUNNING:
        session.commit()
        raise Unavailable("the service is stopped")
    ready = [r for r in svc.replica_rows if r.url]
    if not ready:
        session.commit()
        raise Unavailable("no replica is ready yet; try again shortly")
    replica = ready[svc.calls % len(ready)]
    ok = True
    try:
        resp = _http().request(
            "GET" if path == "health" else "POST",
            f"{replica.url}/{path}",
            json=body if path != "health" else None,
            headers={"X-Replica-Key": replica_key(svc.id)},
        )
        status, payload = resp.status_code, resp.json()
        ok = status < 500
    except (httpx.HTTPError, ValueError) as exc:
        replica.url = None  # look it up again on the next call
        message = f"replica {replica.index} did not answer: {exc}"
        status, payload, ok = 502, envelope(502, "bad_gateway", message), False
    session.execute(
        update(InferenceService)
        .where(InferenceService.id == svc.id)
        .values(
            calls=InferenceService.calls + 1,
            errors=InferenceService.errors + (0 if ok else 1),
        )
    )
    session.commit()
    return status, payload


def service_url(svc: InferenceService) -> str:
    return f"/api/v1/inference/{svc.id}/predict"


def expired_now(svc: InferenceService) -> bool:
    return svc.expires_at is not None and svc.expires_at <= now()
