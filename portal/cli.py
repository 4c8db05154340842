"""``aipool portal``: migrate the database, optionally seed the demo tenants, serve with uvicorn.

Settings come from ``AIPOOL_*`` variables (see :mod:`portal.config`); ``--lab`` points the
portal at the lab cluster's Slurm, with the settings the ``aipool`` command passes in.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import click

#: click's ``ctx.meta`` key of a callable returning the lab cluster's settings: the ``aipool``
#: command puts it there, so ``--lab`` needs nothing of the lab here
LAB_SETTINGS = "aipool.portal.lab_settings"


def lab_settings() -> dict[str, Any]:
    """The lab cluster's settings (``aipool lab up``), as the ``aipool`` command passes them."""
    ctx = click.get_current_context(silent=True)
    provide = ctx.meta.get(LAB_SETTINGS) if ctx is not None else None
    if provide is None:
        raise click.UsageError("--lab works through the aipool command: aipool portal --lab")
    return dict(provide())


def store_mismatches() -> list[str]:
    """What the file store and the database disagree about (inside an app context)."""
    from flask import current_app

    from portal.datasets.service import Settings
    from portal.registry import storage
    from portal.storecheck import check
    from portal.web import session

    datasets = Settings.of(current_app.config, current_app.instance_path).store.root
    return [m.line() for m in check(session(), Path(datasets), storage.root())]


@click.command("portal")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256))
@click.option(
    "--demo",
    is_flag=True,
    help="create the demo tenants of the lab; passwords from AIPOOL_DEMO_PASSWORD_<USER> "
    "or generated and printed once",
)
@click.option("--lab", is_flag=True, help="use the lab cluster's Slurm (aipool lab up)")
def portal(host: str, port: int, threads: int, demo: bool, lab: bool) -> None:
    """Run the AIPool web portal."""
    from portal import create_app
    from portal.asgi import serve
    from portal.database import upgrade
    from portal.demo import passwords_from, seed, seed_billing, seed_domain_admins
    from portal.roles.service import ensure_builtin
    from portal.web import session

    settings: dict[str, Any] = lab_settings() if lab else {}
    if not os.environ.get("AIPOOL_SECRET_KEY"):
        settings["SECRET_KEY"] = secrets.token_hex(32)
        click.echo("AIPOOL_SECRET_KEY is not set: sessions end when the portal stops.", err=True)
    app = create_app(settings)
    with app.app_context():
        upgrade()
        for line in store_mismatches():
            click.echo(f"warning: {line}", err=True)
        ensure_builtin(session())
        if demo:
            created = seed(session(), passwords_from(os.environ))
            for user, password in created.items():
                click.echo(f"demo user {user}: {password}")
            for held in seed_domain_admins(session()):
                click.echo(f"demo domain admin {held}")
            for tenant in seed_billing(session()):
                click.echo(f"demo billing account {tenant} on the standard plan")
    click.echo(
        f"AIPool portal on http://{host}:{port}/ (API at /api/v1, spec /api/v1/openapi.json)"
    )
    serve(app, host=host, port=port, threads=threads)
