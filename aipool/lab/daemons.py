"""Starting and stopping the lab's daemons by PID.

Every daemon runs in the foreground of its own session (``-D``/``-F``), so the PID we get from
``Popen`` is the daemon itself and ``down`` can stop exactly what ``up`` started — never by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Daemons outlive the Popen objects that started them; keeping the objects stops Python from
# warning that a child "is still running" when they are collected.
_CHILDREN: list[subprocess.Popen[bytes]] = []
#: the most a daemon's log may grant: owner read-write, group read, nobody else anything
LOG_MODE = 0o640


class LabError(RuntimeError):
    """Bring-up or teardown failed; the message says what and where to look."""


@dataclass(frozen=True, slots=True)
class Started:
    name: str
    pid: int
    argv: tuple[str, ...]


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    log: Path,
    user: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Started:
    """Start ``argv`` detached from us, optionally as ``user`` (setpriv execs, keeping the PID),
    in ``cwd`` (default: ours)."""
    args = list(argv)
    if user is not None:
        args = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *args]
    log.parent.mkdir(parents=True, exist_ok=True)
    with open_log(log) as out:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
    _CHILDREN.append(proc)
    return Started(name, proc.pid, tuple(args))


def open_log(log: Path) -> BinaryIO:
    """``log`` to append to, readable by its owner and group only (root's, here): the
    daemons' logs name users, jobs and tenants. A log an older lab left readable by all is
    made private too; a link in its place is not followed."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640)
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & LOG_MODE)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "ab")


def alive(pid: int, expect: str | None = None) -> bool:
    """True while ``pid`` runs (and, if given, its command line mentions ``expect``)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # a zombie has exited already
        _reap(pid)
        return False
    return expect is None or expect.encode() in cmdline


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(procs: Iterable[tuple[int, str]], *, grace: float = 15.0) -> list[int]:
    """SIGTERM all ``(pid, expected command)`` at once; SIGKILL what is left after ``grace``.

    Slurm daemons take about 2 s each to exit, so stopping them in parallel matters.
    Returns the PIDs that needed SIGKILL.
    """
    targets = [(pid, exp) for pid, exp in procs if alive(pid, exp)]
    for pid, _ in targets:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not any(alive(pid, exp) for pid, exp in targets):
            _forget_exited()
            return []
        time.sleep(0.05)
    killed = [pid for pid, exp in targets if alive(pid, exp)]
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    _forget_exited()
    return killed


def kill(pid: int, expect: str, *, timeout: float = 10.0) -> None:
    """SIGKILL ``pid`` (if it still runs ``expect``) and wait until it is gone."""
    if not alive(pid, expect):
        return
    _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while alive(pid, expect) and time.monotonic() < deadline:
        time.sleep(0.02)
    _forget_exited()


def _forget_exited() -> None:
    for proc in list(_CHILDREN):
        if proc.poll() is not None:
            _CHILDREN.remove(proc)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def wait_for(
    what: str,
    check: Callable[[], bool],
    *,
    timeout: float,
    pid: int | None = None,
    log: Path | None = None,
    interval: float = 0.05,
) -> float:
    """Poll ``check`` until it is true; fail early if ``pid`` died. Returns seconds waited."""
    start = time.monotonic()
    while True:
        if check():
            return time.monotonic() - start
        if pid is not None and not alive(pid):
            raise LabError(f"{what}: the daemon exited{_tail(log)}")
        if time.monotonic() - start > timeout:
            raise LabError(f"{what}: not ready after {timeout:g} s{_tail(log)}")
        time.sleep(interval)


def _tail(log: Path | None, lines: int = 8) -> str:
    if log is None or not log.exists():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- last lines of {log} ---\n" + "\n".join(text)
