"""Whether the placement daemon is placing jobs, as the admission hook sees it.

The daemon touches its heartbeat file (beside the hook's table) while its cycles succeed;
the hook defers GPU and NPU jobs only while the file is younger than the policy's lapse.
When the daemon stops on purpose it writes ``stopped <epoch seconds>`` into the file and
dates it back to 1970, so the hook stops deferring at once and readers (the portal's
status line) can say since when; a daemon that died leaves its last beat, and Slurm has
placed jobs itself since that beat plus the lapse.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class HeartbeatStatus:
    #: the daemon places jobs now (its heartbeat is fresh)
    running: bool
    #: running: the last beat; stopped: since when Slurm places jobs itself (None: never ran)
    since: float | None


def read_status(path: Path, lapse_s: float, now: float) -> HeartbeatStatus:
    try:
        st = path.stat()
    except FileNotFoundError:
        return HeartbeatStatus(running=False, since=None)
    if now - st.st_mtime <= lapse_s:
        return HeartbeatStatus(running=True, since=st.st_mtime)
    try:
        said = path.read_text(encoding="utf-8", errors="replace")[:100].split()
    except OSError:
        said = []
    if len(said) == 2 and said[0] == "stopped":
        try:
            return HeartbeatStatus(running=False, since=float(said[1]))
        except ValueError:
            pass
    if st.st_mtime <= 0:
        return HeartbeatStatus(running=False, since=None)
    return HeartbeatStatus(running=False, since=st.st_mtime + lapse_s)


def write_stopped(path: Path, now: float) -> None:
    """Mark the heartbeat as a clean stop: stale at once, with the time in the file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(f"stopped {now:.0f}\n", encoding="utf-8")
    # a time and nothing of any tenant: slurmctld's admission hook (SlurmUser) must read it
    tmp.chmod(0o644)
    os.utime(tmp, (0, 0))
    os.replace(tmp, path)
