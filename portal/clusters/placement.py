"""The placement daemon's state for the status line: placing jobs, or stopped (since when),
in which case Slurm places GPU and NPU jobs itself.

Read from the daemon's heartbeat beside the admission table (``ADMISSION_DIR``), named with
its lapse in the base admission policy (``cluster.placement``); nothing to show where the
portal does not know the directory or the policy defers no jobs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from flask import current_app

from slurm_plugins.admission.config import LAB_POLICY, PolicyError, load_policy
from slurm_plugins.admission.heartbeat import read_status


@dataclass(frozen=True, slots=True)
class PlacementLine:
    running: bool
    since: datetime | None


def placement_line() -> PlacementLine | None:
    directory = current_app.config.get("ADMISSION_DIR")
    if not directory:
        return None
    try:
        policy = load_policy(Path(current_app.config.get("ADMISSION_POLICY") or LAB_POLICY))
    except PolicyError:
        return None
    placement = policy.cluster.placement
    if placement is None:
        return None
    status = read_status(Path(directory) / placement.heartbeat, placement.lapse_s, time.time())
    since = datetime.fromtimestamp(status.since, UTC) if status.since is not None else None
    return PlacementLine(status.running, since)
