"""Reconcile inference services with Slurm: restart failed replicas, stop expired services.

``aipool inference reconcile`` runs it on a timer (the lab's services start it), so replicas
come back even when nobody looks at a service; ``--once`` runs one pass. ``flask --app
portal.app:create_app inference reconcile`` is the same single pass inside Flask's CLI.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import click
from flask.cli import with_appcontext
from sqlalchemy import select

from portal import web
from portal.errors import DomainError
from portal.inference.models import InferenceService, ServiceState
from portal.inference.service import reconcile
from portal.slurm import slurm


def reconcile_all() -> list[str]:
    """One pass over every running service; one line per service (inside an app context)."""
    session = web.session()
    ids = session.scalars(
        select(InferenceService.id).where(InferenceService.state == ServiceState.RUNNING.value)
    ).all()
    lines = []
    for service_id in ids:
        svc = session.get(InferenceService, service_id)
        if svc is None:
            continue
        try:
            reconcile(session, slurm(), svc)
        except DomainError as exc:
            session.rollback()
            lines.append(f"{svc.id}\t{svc.name}\terror: {exc.message}")
            continue
        ready = sum(1 for r in svc.replica_rows if r.url)
        lines.append(f"{svc.id}\t{svc.name}\t{svc.state}\t{ready}/{svc.replicas} ready")
    return lines


@click.group("inference")
def inference() -> None:
    """Inference services."""


@inference.command("reconcile")
@with_appcontext
def reconcile_command() -> None:
    """Reconcile every running service once; prints one line per service."""
    for line in reconcile_all():
        click.echo(line)


@click.group("inference")
def cli() -> None:
    """Inference services: the reconciler that keeps replicas in line with Slurm."""


@cli.command("reconcile")
@click.option("--lab", is_flag=True, help="use the lab cluster's Slurm (aipool lab up)")
@click.option(
    "--every",
    "every_s",
    type=click.FloatRange(1, 3600),
    default=30.0,
    show_default=True,
    help="seconds between passes",
)
@click.option("--once", is_flag=True, help="one pass, then exit")
def reconcile_loop(lab: bool, every_s: float, once: bool) -> None:
    """Reconcile every running service, every N seconds until stopped (SIGTERM)."""
    from portal import create_app
    from portal.cli import lab_settings

    app = create_app(lab_settings() if lab else {})
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    while True:
        with app.app_context():  # its teardown ends the pass's database session
            for line in reconcile_all():
                click.echo(line)
        if once or stop.wait(every_s):
            return
