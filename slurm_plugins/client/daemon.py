"""The Slurm client of a daemon's command (the policy daemon, the health checker, the power
programs): the environment its configuration names, and the caller's ``SLURM_CONF``."""

from __future__ import annotations

import os
from collections.abc import Mapping

from slurm_plugins.client.commands import SlurmClient


def slurm_client(env: Mapping[str, str], *, dry_run: bool, timeout: float = 60) -> SlurmClient:
    """A client with the daemon's extra environment; ``SLURM_CONF`` comes from the caller's
    environment when the configuration does not name one."""
    extra = dict(env)
    if "SLURM_CONF" not in extra and os.environ.get("SLURM_CONF"):
        extra["SLURM_CONF"] = os.environ["SLURM_CONF"]
    return SlurmClient(env=extra or None, dry_run=dry_run, timeout=timeout)
