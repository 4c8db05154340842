"""A node's time synchronisation from its time daemon's own words.

``chronyc tracking`` says how far the system clock is from NTP time (``System time :
0.000012 seconds fast of NTP time``) and whether it is synchronised (``Leap status :
Normal``; ``Not synchronised`` otherwise). Where chrony is absent, ``timedatectl show -p
NTPSynchronized --value`` says ``yes`` or ``no`` without an offset. The agent runs the
commands (argv lists, short timeouts); parsing is here, pure, and tested on recorded text.
"""

from __future__ import annotations

import re

from slurm_plugins.node.report import Clock

_SYSTEM_TIME = re.compile(
    r"^System time\s*:\s*([0-9.]+)\s+seconds\s+(fast|slow)\s+of\s+NTP time", re.M
)
_LEAP = re.compile(r"^Leap status\s*:\s*(.+?)\s*$", re.M)


def parse_chronyc_tracking(text: str) -> Clock:
    """``chronyc tracking`` → :class:`Clock` (``offset_s`` > 0: the node runs ahead)."""
    offset: float | None = None
    m = _SYSTEM_TIME.search(text)
    if m:
        offset = float(m[1]) if m[2] == "fast" else -float(m[1])
    leap = _LEAP.search(text)
    synchronised = None if leap is None else leap[1].lower() != "not synchronised"
    if offset is None and synchronised is None:
        raise ValueError("chronyc tracking printed neither a system time nor a leap status")
    return Clock(source="chrony", synchronised=synchronised, offset_s=offset)


def parse_timedatectl(text: str) -> Clock:
    """``timedatectl show -p NTPSynchronized --value`` → :class:`Clock` without offset."""
    word = text.strip().lower()
    if word not in {"yes", "no"}:
        raise ValueError(f"timedatectl printed {text.strip()[:40]!r}, not yes or no")
    return Clock(source="timedatectl", synchronised=word == "yes")
