"""The lab's daemon logs are their owner's and group's only, also one an older lab left
readable by everyone; a link planted in a log's place is not followed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from aipool.lab import daemons


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_log_is_0640(tmp_path: Path) -> None:
    log = tmp_path / "portal.out"
    with daemons.open_log(log) as out:
        out.write(b"alice's job 7\n")
    assert _mode(log) == 0o640


def test_an_older_world_readable_log_is_narrowed_and_kept(tmp_path: Path) -> None:
    log = tmp_path / "slurmrestd.out"
    log.write_bytes(b"before\n")
    log.chmod(0o666)
    with daemons.open_log(log) as out:
        out.write(b"after\n")
    assert _mode(log) == 0o640
    assert log.read_bytes() == b"before\nafter\n"


def test_a_link_in_a_logs_place_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    target.chmod(0o644)
    (tmp_path / "portal.out").symlink_to(target)
    with pytest.raises(OSError, match=r"link|Too many"):
        daemons.open_log(tmp_path / "portal.out")
    assert _mode(target) == 0o644


def test_a_spawned_daemon_writes_into_a_private_log(tmp_path: Path) -> None:
    log = tmp_path / "echo.out"
    started = daemons.spawn("echo", ["sh", "-c", "echo hello"], log=log)
    daemons.wait_for("echo", lambda: log.read_bytes() == b"hello\n", timeout=10)
    (proc,) = [p for p in daemons._CHILDREN if p.pid == started.pid]
    assert proc.wait(timeout=10) == 0
    assert _mode(log) == 0o640
