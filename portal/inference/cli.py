"""``flask --app portal.app:create_app inference reconcile``: one pass of the inference
reconciler over every service, inside Flask's CLI (the daemon is ``aipool reconcile``)."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select

from portal.control.daemon import Daemon
from portal.inference.models import InferenceService
from portal.web import session


def summary() -> list[str]:
    """One line per service: id, name, state, ready replicas (inside an app context)."""
    lines = []
    for svc in session().scalars(select(InferenceService).order_by(InferenceService.id)):
        ready = sum(1 for r in svc.replica_rows if r.url)
        lines.append(f"{svc.id}\t{svc.name}\t{svc.state}\t{ready}/{svc.replicas} ready")
    return lines


@click.group("inference")
def inference() -> None:
    """Inference services."""


@inference.command("reconcile")
@with_appcontext
def reconcile_command() -> None:
    """Reconcile every service once; prints what was done, then one line per service."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    report = Daemon(app, loops=("inference",)).run_pass(full=True)
    if not report.ran:
        raise click.ClickException("another reconciler is running a pass; try again")
    for line in [*report.lines, *summary()]:
        click.echo(line)
