"""The dashboard's placement line: the daemon placing jobs, or stopped (since when) so that
Slurm places them itself; in both languages; read from the heartbeat beside the table."""

from __future__ import annotations

import os
import time
from pathlib import Path

from slurm_plugins.admission.heartbeat import write_stopped
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login

ZH = {"Accept-Language": "zh-CN"}


def beat(env: Env) -> Path:
    directory = Path(env.app.config["ADMISSION_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    return directory / "placement-daemon.alive"  # as the lab policy names it


def test_the_dashboard_says_whether_the_daemon_places_jobs(env: Env) -> None:
    client = login(env, "alice")
    path = beat(env)
    path.unlink(missing_ok=True)
    page = client.get("/").get_data(as_text=True)
    assert "Placement daemon: not running. Slurm places jobs itself." in page
    path.touch()
    page = client.get("/").get_data(as_text=True)
    assert "Placement daemon: running." in page
    assert "放置守护进程正在运行" in client.get("/", headers=ZH).get_data(as_text=True)
    write_stopped(path, time.time() - 3600)
    page = client.get("/").get_data(as_text=True)
    assert "Placement daemon: stopped since" in page
    assert "Slurm places jobs itself." in page
    zh = client.get("/", headers=ZH).get_data(as_text=True)
    assert "放置守护进程自" in zh


def test_a_daemon_that_died_is_shown_stopped_after_the_lapse(env: Env) -> None:
    client = login(env, "carol")
    path = beat(env)
    path.touch()
    old = time.time() - 600
    os.utime(path, (old, old))
    page = client.get("/").get_data(as_text=True)
    assert "Placement daemon: stopped since" in page
