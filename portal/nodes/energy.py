"""Energy saved by elastic nodes: hours each spent powered down times its idle draw, from
the power programs' event log (``POWER_CONFIG``). A request only reads the log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flask import current_app

from plumbing.errors import ConfigError
from slurm_plugins.power.config import load_config
from slurm_plugins.power.plan import NodeEnergy, energy_saved
from slurm_plugins.power.program import read_events

#: window name -> seconds (the same names as the monitoring charts')
WINDOWS = {"1d": 86400, "7d": 7 * 86400, "30d": 30 * 86400}
DEFAULT_WINDOW = "30d"


@dataclass(frozen=True, slots=True)
class EnergyReport:
    configured: bool
    since: float
    until: float
    nodes: tuple[NodeEnergy, ...] = ()

    @property
    def kwh(self) -> float:
        return sum(n.kwh for n in self.nodes)

    @property
    def hours(self) -> float:
        return sum(n.hours for n in self.nodes)


def energy_report(window: str, now: float) -> EnergyReport:
    """The energy saved in the window ending ``now``; ``configured`` is False where the site
    has no elastic nodes (or their configuration cannot be read: the page says so)."""
    since = now - WINDOWS.get(window, WINDOWS[DEFAULT_WINDOW])
    path = current_app.config.get("POWER_CONFIG")
    if not path:
        return EnergyReport(False, since, now)
    try:
        cfg = load_config(Path(path))
    except ConfigError:
        current_app.logger.warning("POWER_CONFIG %s does not load", path)
        return EnergyReport(False, since, now)
    if cfg.events is None:
        return EnergyReport(False, since, now)
    rows = energy_saved(read_events(cfg.events), cfg, since=since, until=now)
    return EnergyReport(True, since, now, tuple(r for r in rows if r.off_s > 0))
