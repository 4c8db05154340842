"""``aipool portal``: migrate the database, optionally seed the demo tenants, serve with uvicorn.

Settings come from ``AIPOOL_*`` variables (see :mod:`portal.config`); ``--lab`` points the
portal at the lab cluster's Slurm.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import click


def lab_settings() -> dict[str, Any]:
    """Slurm settings of the lab cluster (``aipool lab up``)."""
    from aipool.lab.cluster import Lab

    cfg = Lab().cfg
    return {
        "SLURM_ENV": dict(cfg.env()),
        "SLURM_REST_URL": cfg.rest_url,
        "SLURM_JWT_KEY_FILE": str(cfg.jwt_key),
        # where the lab's node agents write utilisation samples (the policy daemon's dir)
        "SAMPLES_DIR": str(cfg.root / "policy" / "samples"),
        # the admission table's directory, the portal's to write (the hook stays root's)
        "ADMISSION_DIR": str(cfg.admission),
        # users' directories are made by the root helper (aipool lab services up installs it)
        "ROOT_HELPER": ["sudo", "-n", str(cfg.root_helper)],
        # what users' jobs run (evaluation, fine-tuning, replicas, Jupyter)
        "JOB_RUNTIME": str(cfg.runtime),
        # the portal's one home, under the lab's root: `aipool lab down` wipes it with the rest
        "PORTAL_HOME": str(cfg.root / "portal"),
    }


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
    from flask_migrate import upgrade

    from portal import create_app
    from portal.asgi import serve
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
