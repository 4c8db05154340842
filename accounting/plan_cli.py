"""``aipool accounting plan …`` and ``aipool accounting account …``: price plans and billing
accounts from the command line (the portal's billing page and API do the same, with the
portal's tenants; here a tenant is a Slurm account)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from accounting.edge import db_option as _db
from accounting.edge import lab_option as _lab
from accounting.edge import open_engine, slurm_accounts, slurm_client

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


def _session(db: str | None) -> Session:
    from sqlalchemy.orm import Session

    return Session(open_engine(db))


def _bad(exc: Exception) -> click.UsageError:
    """A plan or account error as a usage error (exit 2), one line per field."""
    from accounting.plans import PlanError

    if isinstance(exc, PlanError):
        return click.UsageError(
            "\n".join(f"{path}: {m}" for path, ms in exc.errors.items() for m in ms)
        )
    return click.UsageError(str(exc))


@click.group()
def plan() -> None:
    """Price plans: rates per resource and model, monthly packages (YAML or JSON documents)."""


@plan.command("apply")
@_db
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
def plan_apply(db: str | None, file: str) -> None:
    """Create or replace the plan FILE describes (``-``: standard input), all or nothing."""
    from accounting.plans import PlanError, apply_plan, parse_plan

    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read {file}: {exc}") from exc
    try:
        spec = parse_plan(text)
    except PlanError as exc:
        raise _bad(exc) from exc
    with _session(db) as session:
        try:
            applied = apply_plan(session, spec)
        except PlanError as exc:
            raise _bad(exc) from exc
        click.echo(
            f"plan {applied.name} applied: {len(spec.prices)} rates, {len(spec.packages)} packages"
        )


@plan.command("show")
@_db
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml")
def plan_show(db: str | None, name: str, fmt: str) -> None:
    """The plan as a document, ready to edit and apply again."""
    import yaml

    from accounting.plans import NotFoundError, plan_document

    with _session(db) as session:
        try:
            doc = plan_document(session, name)
        except NotFoundError as exc:
            raise _bad(exc) from exc
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), nl=False)


@plan.command("list")
@_db
def plan_list(db: str | None) -> None:
    """Every plan with its rates, packages and the tenants billed on it."""
    from accounting.plans import accounts_by_plan, plan_names, plan_spec

    with _session(db) as session:
        tenants = accounts_by_plan(session)
        for name in plan_names(session):
            spec = plan_spec(session, name)
            doc = spec.document()
            rates = ", ".join(
                f"{p['resource']}{':' + p['model'] if 'model' in p else ''} {p['rate']}"
                for p in doc["prices"]
            )
            packages = ", ".join(k["name"] for k in doc["packages"]) or "-"
            billed = ", ".join(tenants.get(name, [])) or "-"
            click.echo(
                f"{name} ({spec.currency}): {rates}; packages: {packages}; accounts: {billed}"
            )


@click.group()
def account() -> None:
    """Billing accounts: a tenant (a Slurm account: a domain or a project) on a price plan."""


@account.command("open")
@_db
@_lab
@click.argument("tenant")
@click.option("--plan", "plan_name", required=True, help="the price plan")
@click.option("--package", help="a monthly package of that plan")
def account_open(
    db: str | None, lab: bool, tenant: str, plan_name: str, package: str | None
) -> None:
    """Open TENANT's billing account; TENANT must be a Slurm account (a domain or a
    project)."""
    from accounting.plans import AccountExists, PlanError, account_settings, open_account

    exists = slurm_accounts(slurm_client(lab))
    with _session(db) as session:
        try:
            open_account(session, tenant, plan_name, package, tenant_exists=exists)
        except (PlanError, AccountExists) as exc:
            raise _bad(exc) from exc
        _echo_account(account_settings(session, tenant))


@account.command("set")
@_db
@click.argument("tenant")
@click.option("--plan", "plan_name", help="move to this price plan")
@click.option("--package", help="a monthly package of the (new) plan")
@click.option("--no-package", is_flag=True, help="no monthly package: pay as you go")
def account_set(
    db: str | None, tenant: str, plan_name: str | None, package: str | None, no_package: bool
) -> None:
    """Change TENANT's plan and/or package."""
    from accounting.plans import KEEP, NotFoundError, PlanError, account_settings, change_account

    if package and no_package:
        raise click.UsageError("give --package or --no-package, not both")
    if plan_name is None and package is None and not no_package:
        raise click.UsageError("nothing to change: give --plan, --package or --no-package")
    with _session(db) as session:
        try:
            change_account(session, tenant, plan_name, None if no_package else (package or KEEP))
        except (PlanError, NotFoundError) as exc:
            raise _bad(exc) from exc
        _echo_account(account_settings(session, tenant))


def _echo_account(settings: dict[str, Any]) -> None:
    package = settings["package"] or "none"
    click.echo(
        f"{settings['tenant']}: plan {settings['plan']}, package {package}, "
        f"balance {settings['balance']}"
    )
