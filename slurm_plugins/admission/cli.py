"""``policy`` command group: render the admission hook and its policy table.

Mounted by the ``aipool`` console command as ``aipool policy …``; other policy commands
join the same group. A policy file that does not validate prints every ``path: message``
and exits with status 2; a failure to write exits with status 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import click

from slurm_plugins.admission.config import LAB_POLICY, PolicyError, load_policy
from slurm_plugins.admission.render import render_hook, write_files
from slurm_plugins.client import SlurmClient, SlurmError


def _fail(messages: tuple[str, ...] | list[str], code: int) -> NoReturn:
    for message in messages:
        click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(code)


@click.group(name="policy")
def cli() -> None:
    """Scheduling policy: the admission hook (job_submit.lua) and its policy table."""


def _default_out() -> Path | None:
    conf = os.environ.get("SLURM_CONF")
    return Path(conf).parent if conf else None


@cli.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=LAB_POLICY,
    show_default="the lab policy",
    help="Policy file (YAML).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory slurmctld reads job_submit.lua from [default: that of $SLURM_CONF].",
)
@click.option(
    "--pass-through",
    is_flag=True,
    help="A table that accepts every job unchanged (benchmark baseline; no policy!).",
)
@click.option(
    "--profile",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Log the hook's mean and longest time every N submissions (slurmctld's log).",
)
@click.option("--dry-run", is_flag=True, help="Validate and say what would change; write nothing.")
def render(
    config_path: Path, out: Path | None, pass_through: bool, profile: int | None, dry_run: bool
) -> None:
    """Validate the policy and install job_submit.lua + its table (no restart needed)."""
    try:
        config = load_policy(config_path)
    except PolicyError as exc:
        _fail(exc.messages, 2)
    files = render_hook(config, pass_through=pass_through, profile=profile, release=_release())
    out = out or _default_out()
    if out is None:
        _fail(["give --out DIR (or set SLURM_CONF: the files go next to slurm.conf)"], 2)
    if dry_run:
        stale = [n for n, text in files.items() if _read(out / n) != text]
        click.echo(f"would write: {', '.join(stale)}" if stale else "up to date")
        return
    try:
        out.mkdir(parents=True, exist_ok=True)
        changed = write_files(files, out)
    except OSError as exc:
        _fail([f"{out}: {exc.strerror or exc}"], 1)
    what = ", ".join(changed) if changed else "nothing (up to date)"
    click.echo(f"{out}: wrote {what}")
    if pass_through:
        click.echo("warning: pass-through table: the hook admits every job unchecked", err=True)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _release() -> tuple[int, int] | None:
    """The local Slurm's release, for what the policy leaves to it; None without Slurm."""
    try:
        return SlurmClient().release_tuple()
    except SlurmError:
        return None
