"""Where one site keeps what a backup takes, and what a restore needs to act on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class DbdControl(Protocol):
    """Stops and starts slurmdbd around the load of its database."""

    def stop(self) -> None: ...

    def start(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Site:
    cluster: str
    database_url: str | None  # the portal's (and accounting's) database; None: not taken
    slurmdbd_conf: Path | None  # its Storage* lines say where slurmdbd's database is
    config_dirs: tuple[tuple[str, Path], ...]  # label → a directory of rendered configuration
    stores: tuple[tuple[str, Path], ...]  # label → the registry's and datasets' files
    # configuration files that belong to the database rather than to the host (the portal's
    # secret, which the artifacts' keys derive from): restored with the database even when
    # the rest of the configuration goes to a staging directory; (member name, target)
    data_keys: tuple[tuple[str, Path], ...] = ()
    owner: str | None = None  # restored portal files are the service user's
    dbd: DbdControl | None = None
    portal_running: Callable[[], bool] = lambda: False

    def store(self, label: str) -> Path | None:
        return dict(self.stores).get(label)


@dataclass(frozen=True, slots=True)
class SystemdDbd:
    """slurmdbd as the Ansible role installs it: a systemd unit."""

    unit: str = "slurmdbd"

    def stop(self) -> None:
        from aipool.backup.dump import systemctl

        systemctl("stop", self.unit)

    def start(self) -> None:
        from aipool.backup.dump import systemctl

        systemctl("start", self.unit)
