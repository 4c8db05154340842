"""``aipool accounting db …``: accounting's own migrations (:mod:`accounting.migrate`).

``upgrade`` makes or updates accounting's tables in any database (the portal's, or one of
accounting's own); ``current`` and ``check`` say where they are; ``revision`` writes a new
migration from the models, for developers in a checkout.
"""

from __future__ import annotations

import click

from accounting.edge import connect as _engine
from accounting.edge import db_option


@click.group()
def db() -> None:
    """Accounting's tables: migrate them, say where they are."""


@db.command()
@db_option
@click.argument("revision", default="head")
def upgrade(db: str | None, revision: str) -> None:
    """Migrate accounting's tables to REVISION (the newest by default)."""
    from alembic.util import CommandError

    from accounting.migrate import state
    from accounting.migrate import upgrade as run_upgrade

    engine = _engine(db)
    try:
        run_upgrade(engine, revision)
    except CommandError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"accounting's tables at revision {state(engine).current}")


@db.command()
@db_option
@click.argument("revision")
def downgrade(db: str | None, revision: str) -> None:
    """Take accounting's tables back to REVISION (``base``: drop them all)."""
    from alembic.util import CommandError

    from accounting.migrate import downgrade as run_downgrade
    from accounting.migrate import state

    engine = _engine(db)
    try:
        run_downgrade(engine, revision)
    except CommandError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(f"accounting's tables at revision {state(engine).current or 'base (none)'}")


@db.command()
@db_option
def current(db: str | None) -> None:
    """The revision of accounting's tables and the newest one."""
    from accounting.migrate import state

    at = state(_engine(db))
    click.echo(f"{at.current or 'none'} (newest {at.head})")


@db.command()
@db_option
def check(db: str | None) -> None:
    """Exit 1 unless accounting's tables are at the newest revision and match the models."""
    from accounting.migrate import drift, state

    engine = _engine(db)
    at = state(engine)
    if not at.up_to_date:
        click.echo(f"accounting's tables at {at.current or 'none'}, newest is {at.head}", err=True)
        raise SystemExit(1)
    diff = drift(engine)
    for change in diff:
        click.echo(f"differs from the models: {change}", err=True)
    if diff:
        raise SystemExit(1)
    click.echo(f"accounting's tables at {at.head} and as the models describe them")


@db.command()
@db_option
@click.option("-m", "--message", required=True, help="what the revision changes")
@click.option("--empty", is_flag=True, help="an empty revision to fill in, not one from the models")
def revision(db: str | None, message: str, empty: bool) -> None:
    """Write a new revision into accounting/migrations/versions (in a checkout), from how the
    models differ from a database migrated to the newest revision."""
    from accounting.migrate import revision as write_revision

    path = write_revision(_engine(db), message, autogenerate=not empty)
    click.echo(f"wrote {path}")
