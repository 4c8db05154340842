"""Elastic nodes in the lab: their power configuration, programs, and the root starter of
their ``slurmd``.

The lab's ``slurmctld`` runs as root (``SlurmUser=root``), so the programs it runs drop to the
service user before AIPool's code runs (:func:`slurm_plugins.power.render.render_programs`).
Starting a node's ``slurmd`` needs root: the ``lab`` driver asks the lab's starter
(:mod:`aipool.lab.powerhelper`) through ``sudo -n``, which a sudoers rule allows for that one
file; the starter takes only ``start|stop NODE`` of the nodes its root-owned configuration
lists, with the argv the lab wrote there.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import aipool
from aipool.lab import daemons, host, powerhelper
from aipool.lab.config import LabConfig
from plumbing.errors import ConfigError
from slurm_plugins.power.config import PowerConfig, parse_config
from slurm_plugins.power.render import render_programs

CONFIG_FILE = "power.yaml"


def lab_power(cfg: LabConfig) -> tuple[PowerConfig, str] | None:
    """The lab's power configuration (validated) and its text for ``etc/power.yaml``: the
    given file with what is the lab's own filled in (driver, event log, SLURM_CONF)."""
    if cfg.power is None:
        return None
    data: dict[str, Any] = yaml.safe_load(cfg.power.read_text(encoding="utf-8")) or {}
    data.setdefault("driver", {"kind": "lab", "helper": ["sudo", "-n", str(cfg.power_helper)]})
    data.setdefault("events", str(cfg.power_dir / "events.jsonl"))
    data.setdefault("env", {})["SLURM_CONF"] = str(cfg.slurm_conf)
    try:
        parsed = parse_config(data, source=str(cfg.power))
    except ConfigError as exc:
        raise daemons.LabError("\n".join(exc.messages)) from exc
    header = "# Rendered by `aipool lab up` from " + str(cfg.power) + "; do not edit by hand.\n"
    return parsed, header + yaml.safe_dump(data, sort_keys=True)


def program_files(cfg: LabConfig) -> dict[str, str]:
    """The three programs slurmctld runs: ``aipool power …`` of the job runtime, as the
    service user."""
    command = [str(cfg.runtime / "bin" / "aipool")]
    env = {"SLURM_CONF": str(cfg.slurm_conf), "HOME": str(cfg.power_dir)}
    return render_programs(
        cfg.etc / CONFIG_FILE,
        command,
        run_as=host.SERVICE_USER,
        env=env,
        log=cfg.power_dir / "programs.log",
    )


def install_starter(
    cfg: LabConfig, nodes: tuple[str, ...], argv_of: Callable[[str], list[str]]
) -> Path:
    """The starter as root's file, its configuration beside it, and a sudoers rule that lets
    the service user run exactly that file, without a password."""
    path = cfg.power_helper
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    shutil.copyfile(powerhelper.__file__, path)
    path.chmod(0o755)
    run = cfg.run / "power"
    run.mkdir(parents=True, exist_ok=True)
    host.make_service_dir(cfg.power_dir, 0o755)
    # the starter runs under sudo's clean environment: the daemons' own as the lab has it
    checkout = str(Path(aipool.__file__).resolve().parents[1])
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "PYTHONPATH": checkout,
        **cfg.env(),
    }
    conf = {
        "nodes": {n: argv_of(n) for n in nodes},
        "run": str(run),
        "log": str(cfg.log),
        "refuse": str(cfg.power_refuse),
        "env": env,
    }
    conf_file = path.with_name("aipool-lab-power.json")
    conf_file.write_text(json.dumps(conf, indent=2) + "\n")
    conf_file.chmod(0o644)
    host.install_sudoers(cfg.power_sudoers, path)
    return path


def started(cfg: LabConfig) -> list[tuple[int, str]]:
    """``(pid, "slurmd")`` of every node slurmd the starter runs (``lab down`` stops them)."""
    run = cfg.run / "power"
    if not run.is_dir():
        return []
    conf = {"run": str(run)}
    out = []
    for pid_file in sorted(run.glob("*.pid")):
        pid = powerhelper.running(conf, pid_file.stem)
        if pid is not None:
            out.append((pid, "slurmd"))
    return out
