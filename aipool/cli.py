"""``aipool``: a thin command line over the packages."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING

import click

from accounting.edge import SAVED_LANGUAGES
from aipool.lab.daemons import LabError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy import Engine

    from aipool.lab.cluster import Lab


@click.group()
@click.option("-v", "--verbose", count=True, help="Log Slurm commands (-v) and more (-vv).")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """AIPool: pooled, fairly shared GPUs and NPUs on Slurm."""
    from aipool.lab.settings import install

    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    install(ctx.meta)  # the lab's settings, for the packages' --lab options
    ctx.meta[SAVED_LANGUAGES] = _saved_languages  # the portal's users' languages, for mail


def _saved_languages(engine: Engine) -> Mapping[str, str]:
    from portal.usage.languages import saved_languages

    return saved_languages(engine)


@main.group()
def lab() -> None:
    """The local lab cluster: real Slurm daemons on this host."""


def _lab() -> Lab:
    from aipool.lab.cluster import Lab

    return Lab()


@lab.command()
@click.option(
    "--clusters", type=click.IntRange(1, 3), help="Clusters sharing one slurmdbd (default 1)."
)
@click.option(
    "--controllers", type=click.IntRange(1, 3), help="slurmctld: primary plus backups (default 1)."
)
def up(clusters: int | None, controllers: int | None) -> None:
    """Start (or complete) the lab cluster; idempotent."""
    from aipool.lab import services as svc

    lab_ = _lab()
    try:
        report = lab_.up(
            progress=lambda m: click.echo(f"  {m}", err=True),
            clusters=clusters,
            controllers=controllers,
        )
        tokens = svc.token_service(lab_)  # slurmrestd's users' tokens, beside slurmrestd
    except LabError as exc:
        raise click.ClickException(str(exc)) from exc
    report.started += tokens.started
    report.reused += tokens.reused
    for what, at in report.steps:
        click.echo(f"{at:6.2f} s  {what}")
    click.echo(f"started: {', '.join(report.started) or 'nothing (already up)'}")
    if report.reused:
        click.echo(f"already running: {', '.join(report.reused)}")
    click.echo(f"address: {lab_.cfg.address} ({lab_.address_note()})")
    click.echo(f'lab up in {report.elapsed:.1f} s; use it with: eval "$(aipool lab env)"')


@lab.command()
@click.option("--keep-state", is_flag=True, help="Stop the daemons but keep state and logs.")
def down(keep_state: bool) -> None:
    """Cancel all jobs, stop what `lab up` started (by PID) and wipe the lab state."""
    stopped = _lab().down(wipe=not keep_state)
    click.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}")


@lab.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(as_json: bool) -> None:
    """Which lab daemons run; exit code 1 when the lab is not (fully) up."""
    st = _lab().status()
    if as_json:
        click.echo(json.dumps(st, indent=2))
    else:
        click.echo(f"lab {st['cluster']} at {st['root']}: {'up' if st['up'] else 'DOWN'}")
        click.echo(f"  address {st['address']} ({st['address_note']})")
        for name, d in st["daemons"].items():
            click.echo(f"  {name:<22} pid {d['pid']:<8} {'running' if d['running'] else 'DEAD'}")
        if st["metrics"]:
            click.echo(f"  metrics (Prometheus configuration {st['metrics']['scrape_config']}):")
            for job, where in st["metrics"]["jobs"].items():
                click.echo(f"    {job:<20} {' '.join(where)}")
    sys.exit(0 if st["up"] else 1)


@lab.group()
def services() -> None:
    """AIPool's services on the lab: the policy daemon and the portal."""


@services.command("up")
@click.option(
    "--port",
    type=int,
    default=None,
    help="Portal port on 127.0.0.1 [default: 8080, moved by AIPOOL_LAB_PORT_OFFSET].",
)
def services_up(port: int | None) -> None:
    """Start the policy daemon and the portal (demo tenants); idempotent."""
    from aipool.lab import services as svc

    try:
        info = svc.up(_lab(), port=port)
    except LabError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"started: {', '.join(info.started) or 'nothing (already running)'}")
    click.echo(f"portal: {info.portal_url}  (demo logins in {info.passwords_file})")


@services.command("down")
def services_down() -> None:
    """Stop the policy daemon and the portal; Slurm keeps running."""
    from aipool.lab import services as svc

    stopped = svc.down(_lab())
    click.echo(f"stopped: {', '.join(stopped) or 'nothing was running'}")


@lab.command()
def env() -> None:
    """Shell exports for plain sbatch/squeue on the lab: eval "$(aipool lab env)"."""
    click.echo(_lab().env_exports())


@lab.command()
@click.option("--wait/--no-wait", default=True, help="Wait for the demo jobs to finish.")
def demo(wait: bool) -> None:
    """Run the demo workload: a whole GPU, two jobs sharing one card, an NPU job."""
    from aipool.lab.demo import run_demo

    try:
        run_demo(_lab(), wait=wait, echo=click.echo)
    except LabError as exc:
        raise click.ClickException(str(exc)) from exc


def _mount() -> None:
    """The packages' own command groups, under one ``aipool``."""
    from accounting.cli import accounting
    from aipool.backup.cli import backup
    from aipool.score import score as score_cli
    from gres.cli import cli as gres_cli
    from jobspec.cli import COMMANDS as job_commands
    from portal.cli import portal
    from portal.control.cli import command as reconcile_cli
    from portal.presets.cli import models as models_cli
    from sim.cli import cli as sim_cli
    from slurm_plugins.admission.cli import cli as policy_cli
    from slurm_plugins.federation.cli import clusters as clusters_cli
    from slurm_plugins.health.cli import cli as health_cli
    from slurm_plugins.node.cli import cli as node_cli
    from slurm_plugins.policy.cli import COMMANDS as policy_commands
    from slurm_plugins.power.cli import cli as power_cli

    gres_cli.add_command(score_cli)
    main.add_command(gres_cli, name="gres")
    for command in job_commands:
        main.add_command(command)
    main.add_command(portal)
    main.add_command(sim_cli, name="sim")
    main.add_command(clusters_cli, name="clusters")
    for command in policy_commands:
        policy_cli.add_command(command)
    main.add_command(policy_cli, name="policy")
    main.add_command(health_cli, name="health")
    main.add_command(node_cli, name="node")
    main.add_command(power_cli, name="power")
    main.add_command(accounting)
    main.add_command(reconcile_cli, name="reconcile")
    main.add_command(backup)
    main.add_command(models_cli)


_mount()

if __name__ == "__main__":
    main()
