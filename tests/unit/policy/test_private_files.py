"""The policy daemon's files that name tenants' jobs (its decision log, its state, its
notifications file) are its user's and group's only (0640), whatever the umask, also when an
older version of them was wider."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from plumbing.notify import FileSink, Notification
from slurm_plugins.policy.snapshot import DaemonState
from slurm_plugins.policy.state import REASONS, ReasonLog, StateStore


@pytest.fixture(autouse=True)
def _open_umask() -> Iterator[None]:
    saved = os.umask(0o000)  # the widest: the modes must come from the code
    yield
    os.umask(saved)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_decision_log_and_its_previous_copy_are_0640(tmp_path: Path) -> None:
    (tmp_path / REASONS).write_text("{}")
    (tmp_path / REASONS).chmod(0o644)  # as an older daemon left it
    log = ReasonLog(tmp_path)
    log.record({7: ["gang g1: held"]}, 1000.0)
    log.record({8: ["vision over its share"]}, 1001.0)
    assert _mode(tmp_path / REASONS) == 0o640
    assert _mode(tmp_path / f"{REASONS}.prev") == 0o640
    assert log.reasons_for(8) == ["vision over its share"]


def test_the_state_is_0640(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.save(DaemonState())
    store.save(DaemonState())
    assert _mode(tmp_path / "state.json") == 0o640
    assert _mode(tmp_path / "state.json.prev") == 0o640


def test_the_notifications_file_is_0640(tmp_path: Path) -> None:
    path = tmp_path / "notifications.jsonl"
    path.write_text("")
    path.chmod(0o666)
    FileSink(path).send(Notification("idle_warning", 7, ("alice",), "idle", "job 7 is idle"))
    assert _mode(path) == 0o640
    assert '"users": ["alice"]' in path.read_text()
