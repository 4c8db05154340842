"""What accounting's commands take from where they run: the database and Slurm.

Everything comes in at the edge, parsed once:

- the database from ``--db`` or ``AIPOOL_DATABASE_URL``: the portal's, or one of accounting's
  own; its accounting tables must be migrated (``aipool accounting db upgrade``);
- Slurm's environment from ``AIPOOL_SLURM_ENV`` (JSON), or, with ``--lab``, the lab cluster's,
  which the ``aipool`` command puts into click's context under :data:`LAB_SLURM_ENV`
  (accounting knows nothing of the lab);
- a ready :class:`~slurm_plugins.client.SlurmClient` as click's context object, where a
  program embedding these commands (or a test) has one;
- the site's language, name and logo for reports and mail, from the options or the portal's
  own settings in the environment (``AIPOOL_DEFAULT_LOCALE``, ``AIPOOL_SITE_NAME``,
  ``AIPOOL_SITE_LOGO``), so that both speak as one site;
- the users' saved languages (the portal's), through a callable the ``aipool`` command puts
  into click's context under :data:`SAVED_LANGUAGES` (accounting knows nothing of the portal).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from translations import DEFAULT, LOCALES

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.accounting")

#: click's ``ctx.meta`` key of a callable returning the lab cluster's Slurm environment
LAB_SLURM_ENV = "aipool.accounting.lab_slurm_env"
#: click's ``ctx.meta`` key of a callable ``(engine) -> {user: locale}``: the languages the
#: users chose in the portal that shares the database (none where it does not)
SAVED_LANGUAGES = "aipool.accounting.saved_languages"

db_option = click.option(
    "--db",
    envvar="AIPOOL_DATABASE_URL",
    help="database URL (the portal's, or accounting's own)",
)
lab_option = click.option(
    "--lab", is_flag=True, help="read Slurm of the lab cluster (aipool lab up)"
)

locale_option = click.option(
    "--locale",
    envvar="AIPOOL_DEFAULT_LOCALE",
    type=click.Choice(sorted(LOCALES)),
    default=DEFAULT,
    show_default=True,
    help="the language of reports and of mail to readers who chose none",
)
site_name_option = click.option(
    "--site-name",
    envvar="AIPOOL_SITE_NAME",
    default="AIPool",
    show_default=True,
    help="the site's name, at the head of reports",
)
site_logo_option = click.option(
    "--site-logo",
    envvar="AIPOOL_SITE_LOGO",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="the site's logo (PNG or JPEG), at the head of PDF reports",
)


def saved_languages_reader() -> Callable[[Engine], Mapping[str, str]] | None:
    """What reads the users' own languages (``{user or address: locale}``) from a database,
    where the ``aipool`` command knows how (the portal's users); ``None`` elsewhere. A reading
    that fails is logged and counts as no choices: mail then goes in the site's language."""
    ctx = click.get_current_context(silent=True)
    provide: Callable[[Engine], Mapping[str, str]] | None = (
        ctx.meta.get(SAVED_LANGUAGES) if ctx is not None else None
    )
    if provide is None:
        return None
    reader = provide

    def read(engine: Engine) -> Mapping[str, str]:
        from sqlalchemy.exc import SQLAlchemyError

        try:
            return dict(reader(engine))
        except SQLAlchemyError as exc:
            log.warning("the users' languages could not be read: %s", exc)
            return {}

    return read


def connect(url: str | None) -> Engine:
    """An engine on ``url`` that answers, its tables migrated or not."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import ArgumentError, OperationalError

    if not url:
        raise click.UsageError("no database: pass --db or set AIPOOL_DATABASE_URL")
    try:
        engine = create_engine(url)
    except (ArgumentError, ValueError) as exc:
        raise click.UsageError(f"database URL not understood: {exc}") from exc
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        engine.dispose()
        raise click.ClickException(f"cannot open the database: {exc.orig}") from exc
    # a command's pooled connections close with it: Python 3.13 warns about a SQLite
    # connection left for the garbage collector, which the tests treat as an error
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(engine.dispose)
    return engine


def open_engine(url: str | None) -> Engine:
    """An engine on ``url``, which must answer and hold accounting's tables at the revision
    this code needs."""
    from accounting.migrate import state

    engine = connect(url)
    at = state(engine)
    where = engine.url.render_as_string()
    if at.current is None:
        raise click.ClickException(
            f"{where} has no accounting tables: migrate it first "
            "(`aipool accounting db upgrade`, or start the portal, which migrates them)"
        )
    if not at.up_to_date:
        raise click.ClickException(
            f"{where} has accounting's tables at revision {at.current}, this accounting needs "
            f"{at.head}: run `aipool accounting db upgrade`"
        )
    return engine


def slurm_client(lab: bool) -> SlurmClient:
    """The Slurm client: the context's own, the lab's (``--lab``), or one on this host's Slurm
    with ``AIPOOL_SLURM_ENV`` added to the environment."""
    from slurm_plugins.client import SlurmClient

    ctx = click.get_current_context(silent=True)
    given = ctx.find_object(SlurmClient) if ctx is not None else None
    if given is not None:
        return given
    if lab:
        return SlurmClient(env=_lab_env(ctx), timeout=120)
    try:
        env = json.loads(os.environ.get("AIPOOL_SLURM_ENV", "{}"))
    except ValueError as exc:
        raise click.UsageError(f"AIPOOL_SLURM_ENV is not a JSON object: {exc}") from exc
    return SlurmClient(env={**os.environ, **env} if env else None, timeout=120)


def _lab_env(ctx: click.Context | None) -> Mapping[str, str]:
    provide: Callable[[], Mapping[str, str]] | None = (
        ctx.meta.get(LAB_SLURM_ENV) if ctx is not None else None
    )
    if provide is None:
        raise click.UsageError("--lab works through the aipool command: aipool accounting … --lab")
    return provide()


def slurm_accounts(client: SlurmClient) -> Callable[[str], bool]:
    """The tenant check of the command line: a tenant is a Slurm account (a domain or a
    project). Slurm is asked once, when the check is first made."""
    from slurm_plugins.client import SlurmError

    known: set[str] | None = None

    def exists(tenant: str) -> bool:
        nonlocal known
        if known is None:
            try:
                known = {a.account for a in client.associations()}
            except SlurmError as exc:
                raise click.ClickException(
                    f"cannot check {tenant!r} against Slurm's accounts: {exc}"
                ) from exc
        return tenant in known

    return exists
