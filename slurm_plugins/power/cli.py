"""``aipool power``: the programs slurmctld runs for elastic nodes (``resume``, ``suspend``,
``resume-fail`` HOSTLIST), the slurm.conf lines and scripts for a site (``render``), and the
energy saved (``energy``). docs/elastic.md."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import click

from plumbing.cli import fail, load_or_exit
from plumbing.fields import parse_duration
from slurm_plugins.client.daemon import slurm_client
from slurm_plugins.power.config import load_config

log = logging.getLogger("aipool.power")

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="the elastic nodes' configuration (docs/elastic.md)",
)


@click.group(name="power")
def cli() -> None:
    """Elastic nodes: Slurm's power saving through AIPool's programs."""


def _run(config_path: Path, action: str, hostlist: str) -> None:
    from slurm_plugins.power.drivers import driver_for
    from slurm_plugins.power.program import Programs

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    log.setLevel(logging.INFO)  # the programs' every step, into the log their script names
    cfg = load_or_exit(load_config, config_path)
    programs = Programs(cfg, slurm_client(cfg.env, dry_run=False), driver_for(cfg.driver))
    try:
        report = {
            "resume": programs.resume,
            "suspend": programs.suspend,
            "resume-fail": programs.resume_failed,
        }[action](hostlist)
    except ValueError as exc:  # a hostlist that does not parse
        fail([str(exc)], 2)
    for o in report.switched:
        log.info("%s %s: %s %s", action, o.node, "ok" if o.ok else "FAILED", o.detail)
    for node, reason in report.refused:
        log.info("%s %s: refused: %s", action, node, reason)
    for node in report.released:
        log.info("%s: returned to service", node)
    if report.failed or report.refused:
        sys.exit(1)


@cli.command()
@config_option
@click.argument("hostlist")
def resume(config_path: Path, hostlist: str) -> None:
    """ResumeProgram: switch the nodes on; those that fail go DOWN with the reason."""
    _run(config_path, "resume", hostlist)


@cli.command()
@config_option
@click.argument("hostlist")
def suspend(config_path: Path, hostlist: str) -> None:
    """SuspendProgram: switch the nodes off."""
    _run(config_path, "suspend", hostlist)


@cli.command(name="resume-fail")
@config_option
@click.argument("hostlist")
def resume_fail(config_path: Path, hostlist: str) -> None:
    """ResumeFailProgram: Slurm gave up on the nodes; switch them off again."""
    _run(config_path, "resume-fail", hostlist)


@cli.command()
@config_option
@click.option("--programs-dir", type=click.Path(path_type=Path), required=True)
@click.option("--command", "command", default="aipool", show_default=True)
@click.option("--run-as", default=None, help="drop to this user (slurmctld runs as root)")
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="NAME=HOSTLIST",
    help="a partition and its nodes (for the floors), repeated",
)
@click.option("--all-nodes", default="", help="every node of the cluster (hostlist)")
@click.option("--write", is_flag=True, help="write the scripts into --programs-dir")
def render(  # noqa: PLR0917 - one parameter per click option
    config_path: Path,
    programs_dir: Path,
    command: str,
    run_as: str | None,
    partitions: tuple[str, ...],
    all_nodes: str,
    write: bool,
) -> None:
    """Print slurm.conf's power-saving lines; with --write, write the program scripts."""
    from gres.hostlist import expand_hostlist
    from slurm_plugins.power.render import render_power_lines, render_programs

    cfg = load_or_exit(load_config, config_path)
    parts: dict[str, tuple[str, ...]] = {}
    try:
        for item in partitions:
            name, sep, hosts = item.partition("=")
            if not sep or not name:
                raise ValueError(f"--partition {item!r}: expected NAME=HOSTLIST")
            parts[name] = expand_hostlist(hosts)
        every = expand_hostlist(all_nodes) or tuple(n for p in parts.values() for n in p)
    except ValueError as exc:
        fail([str(exc)], 2)
    click.echo(render_power_lines(cfg, programs_dir, parts, tuple(dict.fromkeys(every))), nl=False)
    if write:
        scripts = render_programs(config_path.resolve(), [command], run_as=run_as, env=cfg.env)
        programs_dir.mkdir(parents=True, exist_ok=True)
        for name, text in scripts.items():
            (programs_dir / name).write_text(text)
            (programs_dir / name).chmod(0o755)


@cli.command()
@config_option
@click.option("--since", default="30d", show_default=True, help="how far back (e.g. 7d, 12h)")
@click.option("--json", "as_json", is_flag=True)
def energy(config_path: Path, since: str, as_json: bool) -> None:
    """Hours each node spent powered down and the energy that saved (kWh)."""
    from slurm_plugins.power.plan import energy_saved
    from slurm_plugins.power.program import read_events

    cfg = load_or_exit(load_config, config_path)
    if cfg.events is None:
        fail([f"{config_path}: no events: file is configured"], 2)
    try:
        back = parse_duration(since)
    except ValueError as exc:
        fail([str(exc)], 2)
    now = time.time()
    rows = energy_saved(read_events(cfg.events), cfg, since=now - back, until=now)
    if as_json:
        data = [{"node": r.node, "hours": r.hours, "watts": r.watts, "kwh": r.kwh} for r in rows]
        click.echo(json.dumps(data, indent=2))
        return
    for r in rows:
        click.echo(f"{r.node:<16} {r.hours:10.2f} h  {r.watts:7.0f} W  {r.kwh:10.3f} kWh")
    click.echo(f"{'total':<16} {sum(r.kwh for r in rows):39.3f} kWh")
