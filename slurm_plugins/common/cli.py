"""What the daemons' commands share: failing with messages, loading a configuration, a
Slurm client for a daemon's environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from slurm_plugins.common.errors import ConfigError

if TYPE_CHECKING:
    from slurm_plugins.client import SlurmClient

T = TypeVar("T")


def fail(messages: Sequence[str], code: int) -> NoReturn:
    """Print each message as ``error: …`` on stderr and exit with ``code``."""
    for m in messages:
        click.echo(f"error: {m}", err=True)
    raise click.exceptions.Exit(code)


def load_or_exit(load: Callable[[Path], T], path: Path) -> T:
    """``load(path)``; a configuration that does not validate prints every ``path: message``
    and exits with 2."""
    try:
        return load(path)
    except ConfigError as exc:
        fail(exc.messages, 2)


def slurm_client(env: Mapping[str, str], *, dry_run: bool, timeout: float = 60) -> SlurmClient:
    """A client with the daemon's extra environment; ``SLURM_CONF`` comes from the caller's
    environment when the configuration does not name one."""
    from slurm_plugins.client import SlurmClient

    extra = dict(env)
    if "SLURM_CONF" not in extra and os.environ.get("SLURM_CONF"):
        extra["SLURM_CONF"] = os.environ["SLURM_CONF"]
    return SlurmClient(env=extra or None, dry_run=dry_run, timeout=timeout)
