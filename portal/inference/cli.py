"""``flask --app portal.app:create_app inference reconcile``: bring every running service's
replicas in line with Slurm once (restart failed ones, stop expired services); run it from a
timer so replicas come back even when nobody looks at the service."""

from __future__ import annotations

import click
from flask.cli import with_appcontext
from sqlalchemy import select

from portal import web
from portal.errors import DomainError
from portal.inference.models import InferenceService, ServiceState
from portal.inference.service import reconcile
from portal.slurm import slurm


@click.group("inference")
def inference() -> None:
    """Inference services."""


@inference.command("reconcile")
@with_appcontext
def reconcile_command() -> None:
    """Reconcile every running service once; prints one line per service."""
    session = web.session()
    ids = session.scalars(
        select(InferenceService.id).where(InferenceService.state == ServiceState.RUNNING.value)
    ).all()
    for service_id in ids:
        svc = session.get(InferenceService, service_id)
        if svc is None:
            continue
        try:
            reconcile(session, slurm(), svc)
        except DomainError as exc:
            session.rollback()
            click.echo(f"{svc.id}\t{svc.name}\terror: {exc.message}")
            continue
        ready = sum(1 for r in svc.replica_rows if r.url)
        click.echo(f"{svc.id}\t{svc.name}\t{svc.state}\t{ready}/{svc.replicas} ready")
