"""What the daemons' commands share: failing with messages, loading a configuration."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

import click

from plumbing.errors import ConfigError

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
