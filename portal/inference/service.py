"""Inference services: a model version served by replica jobs (one Slurm job each, submitted
as the service's owner) and called through the portal.

Requests only read and record what a service should be: created, scaled, its allow-list,
expiry or device changed, started, stopped, deleted. The inference reconciler
(:mod:`portal.inference.reconcile`, run by ``aipool reconcile``) makes it so within seconds:
it submits and cancels the replica jobs, restarts failed ones, expires services and removes
deleted ones. A call is proxied to a replica the reconciler found ready; with none, the caller
is told to try again in a moment.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from typing import Any

import httpx
from flask import current_app
from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from portal import userdirs
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.clock import now
from portal.errors import (
    Conflict,
    DomainError,
    Forbidden,
    NotFound,
    Unavailable,
    ValidationFailed,
    envelope,
)
from portal.i18n import gettext
from portal.inference.models import Device, InferenceService, Replica, ServiceState
from portal.registry import runs, workdirs
from portal.registry import words as registry_words
from portal.registry.access import Level
from portal.registry.models import VersionStatus
from portal.registry.service import version_by_id
from portal.tenancy.models import Project
from portal.tenancy.service import get_project
from translations import N_

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
            message = gettext(
                "%(value)s is neither an IP address nor a network (CIDR).", value=value
            )
            raise ValidationFailed({"allow_ips": [message]}) from None
    return nets


# ---------------------------------------------------------------------- access
def services_query(access: Access, filters: Mapping[str, Any]) -> Select[Any]:
    stmt = (
        select(InferenceService)
        .where(InferenceService.state != ServiceState.DELETING.value)
        .order_by(InferenceService.id)
    )
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
    if svc is None or project is None or svc.state == ServiceState.DELETING:
        raise NotFound(gettext("Inference service not found."))
    perms = access.on_project(project)
    owner = svc.owner_id == access.user_id
    if not owner and Perm.PROJECT_READ not in perms and not access.platform_admin:
        raise NotFound(gettext("Inference service not found."))
    if manage and not (owner or Perm.PROJECT_MANAGE in perms or access.platform_admin):
        raise Forbidden(
            gettext("Only the service's owner or the project's managers may change it.")
        )
    return svc


# ---------------------------------------------------------------------- lifecycle
def create(
    session: Session, access: Access, data: Mapping[str, Any]
) -> tuple[InferenceService, str]:
    """One click: a version becomes a service; returns it and its token (shown once). The
    model's files are staged for its replicas here; the reconciler submits them."""
    version = version_by_id(session, access, data["version_id"], Level.READ)
    if version.status in (VersionStatus.TRAINING, VersionStatus.FAILED) or not version.storage:
        raise Conflict(
            gettext(
                "Version %(number)d is %(status)s: there is nothing to serve yet.",
                number=version.number,
                status=registry_words.status(version.status),
            )
        )
    runs.preset_of(version.model)
    project = get_project(
        session, access, data.get("project_id") or version.model.project_id, Perm.JOBS_SUBMIT
    )
    name = data.get("name") or f"{version.model.name}-v{version.number}"
    taken = session.scalar(
        select(InferenceService.state).where(
            InferenceService.project_id == project.id, InferenceService.name == name
        )
    )
    if taken == ServiceState.DELETING:
        raise Conflict(
            gettext(
                "A service named %(name)s is still being deleted. Try again in a moment.",
                name=name,
            )
        )
    if taken:
        raise Conflict(
            gettext(
                "Project %(project)s already has a service named %(name)s.",
                project=project.name,
                name=name,
            )
        )
    device, gpus, shards = _device(data)
    token = "svc_" + secrets.token_urlsafe(24)
    workdir = workdirs.new_workdir(access.username)
    try:
        runs.stage_model(version, workdir / "model", access.username)
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
            raise ValidationFailed({"expires_at": [gettext("The expiry must be in the future.")]})
        session.add(svc)
        session.flush()
        _audit(session, access, "inference.create", svc, after=svc.audit_view())
        session.commit()
    except BaseException:
        session.rollback()
        userdirs.remove_run(workdir)
        raise
    return svc, token


def _device(data: Mapping[str, Any]) -> tuple[str, int, int]:
    device = data.get("device", Device.CPU.value)
    if device == Device.GPU:
        return device, int(data.get("gpus") or 1), 0
    if device == Device.FRACTION:
        shards = int(data.get("shards") or 8)
        if not 1 <= shards <= 31:
            message = gettext(
                "From 1 to 31 shards (k/32 of a card); 32 shards are a whole card: choose GPU."
            )
            raise ValidationFailed({"shards": [message]})
        return device, 0, shards
    return Device.CPU.value, 0, 0


def edit(
    session: Session, access: Access, service_id: int, data: Mapping[str, Any]
) -> InferenceService:
    """Scale (replicas), allow-list, expiry, device (the reconciler replaces the replicas
    that run on the old device)."""
    svc = get_service(session, access, service_id, manage=True)
    before = svc.audit_view()
    if "replicas" in data:
        svc.replicas = data["replicas"]
    if "allow_ips" in data:
        svc.allow_ips = check_ips(data["allow_ips"])
    if "expires_at" in data:
        if data["expires_at"] is not None and data["expires_at"] <= now():
            message = gettext("The expiry must be in the future (or empty: no expiry).")
            raise ValidationFailed({"expires_at": [message]})
        svc.expires_at = data["expires_at"]
        if svc.state == ServiceState.EXPIRED:
            svc.state = ServiceState.STOPPED.value
    if "device" in data:
        svc.device, svc.gpus, svc.shards = _device(data)
    _audit(session, access, "inference.update", svc, before=before, after=svc.audit_view())
    session.commit()
    return svc


def set_state(
    session: Session, access: Access, service_id: int, state: ServiceState
) -> InferenceService:
    """Start or stop: recorded here, carried out by the reconciler (replicas submitted, or
    cancelled and a decrypted model copy dropped)."""
    svc = get_service(session, access, service_id, manage=True)
    if state == ServiceState.RUNNING and expired_now(svc):
        raise Conflict(gettext("The service has expired: set a later expiry first."))
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
    return svc


def delete(session: Session, access: Access, service_id: int) -> None:
    """Gone for its users at once; the reconciler cancels its replicas, removes its directory
    and then its row."""
    svc = get_service(session, access, service_id, manage=True)
    _audit(session, access, "inference.delete", svc, before=svc.audit_view())
    svc.state = ServiceState.DELETING.value
    session.commit()


def new_token(session: Session, access: Access, service_id: int) -> str:
    svc = get_service(session, access, service_id, manage=True)
    token = "svc_" + secrets.token_urlsafe(24)
    svc.token_hash, svc.token_hint = _hash(token), token[:8]
    _audit(session, access, "inference.token", svc)
    session.commit()
    return token


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


STARTING = N_("The service is starting: no replica is ready yet. Try again in a moment.")


def call(
    session: Session,
    service_id: int,
    *,
    token: str | None,
    remote: str | None,
    path: str,
    body: Any,
) -> tuple[int, Any]:
    """A call from a client with the service's token, proxied to a ready replica, counted.
    It reads the rows the reconciler keeps and asks Slurm nothing."""
    svc = session.get(InferenceService, service_id)
    if (
        svc is None
        or svc.state == ServiceState.DELETING
        or not token
        or not hmac.compare_digest(svc.token_hash, _hash(token))
    ):
        raise NotFound(gettext("Inference service not found (or a wrong token)."))
    if not _allowed(svc, remote):
        raise Forbidden(
            gettext("%(address)s is not on the service's IP allow-list.", address=remote)
        )
    return forward(session, svc, path, body)


def try_call(session: Session, access: Access, service_id: int, body: Any) -> tuple[int, Any]:
    """A prediction asked for on the service's page by someone who may read the service: the
    portal's session lets them in, not the token, so the IP allow-list (which guards the
    token's calls from programs) does not apply; it is counted like any call."""
    return forward(session, get_service(session, access, service_id), "predict", body)


def forward(session: Session, svc: InferenceService, path: str, body: Any) -> tuple[int, Any]:
    """A call to a ready replica of ``svc``; the caller has been let in. A prediction is
    counted (and a replica that does not answer one loses its address until the reconciler
    reads it again); ``health`` only reports: a GET changes nothing, and a replica's address
    is the reconciler's to keep (it reads every running replica's again on each full pass)."""
    if svc.state == ServiceState.EXPIRED or expired_now(svc):
        raise Gone(gettext("The service has expired."))
    if svc.state != ServiceState.RUNNING:
        raise Unavailable(gettext("The service is stopped."))
    ready = [r for r in svc.replica_rows if r.url and r.index < svc.replicas]
    if not ready:
        raise Unavailable(gettext(STARTING))
    replica = ready[svc.calls % len(ready)]
    url, ok, gone, health = replica.url, True, False, path == "health"
    try:
        resp = _http().request(
            "GET" if health else "POST",
            f"{url}/{path}",
            json=None if health else body,
            headers={"X-Replica-Key": replica_key(svc.id)},
        )
        status, payload = resp.status_code, resp.json()
        ok = status < 500
    except (httpx.HTTPError, ValueError) as exc:
        message = gettext(
            "Replica %(index)d did not answer: %(reason)s", index=replica.index, reason=exc
        )
        status, payload, ok, gone = 502, envelope(502, "bad_gateway", message), False, True
    if health:
        return status, payload
    if gone:
        # the reconciler reads its address again (unless it has moved on meanwhile)
        session.execute(
            update(Replica).where(Replica.id == replica.id, Replica.url == url).values(url=None)
        )
    session.execute(
        update(InferenceService)
        .where(InferenceService.id == svc.id)
        .values(
            calls=InferenceService.calls + 1,
            errors=InferenceService.errors + (0 if ok else 1),
            # a call is no change of what the service should be (the reconciler watches this)
            updated_at=InferenceService.updated_at,
        )
    )
    session.commit()
    return status, payload


def service_url(svc: InferenceService) -> str:
    return f"/api/v1/inference/{svc.id}/predict"


def expired_now(svc: InferenceService) -> bool:
    return svc.expires_at is not None and svc.expires_at <= now()
