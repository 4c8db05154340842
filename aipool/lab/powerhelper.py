#!/usr/bin/python3 -I
"""aipool-lab-power: starts and stops a lab node's ``slurmd``, for the lab's power driver.

A lab node is one ``slurmd -N <node>`` on this host, and slurmd runs as root, as Slurm
requires. AIPool's power programs run as the service user; they reach this script through a
sudoers rule the lab installs for it alone, with one of two argument lists::

    aipool-lab-power start NODE    # NODE's slurmd, unless it runs; its PID in run/NODE.pid
    aipool-lab-power stop  NODE    # SIGTERM to that slurmd (SIGKILL after a grace), if it runs

NODE must be one of the power-saved nodes its configuration lists; the argv that starts it
comes from that configuration, never from the caller. A node listed in the refuse file does
not start (the lab's stand-in for a node whose BMC does not answer). The configuration is the
file ``aipool-lab-power.json`` beside this script, root's and not writable by others. Standard
library only, run under ``python3 -I``.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

USAGE = "usage: aipool-lab-power start|stop NODE"
GRACE_S = 10.0
# a started slurmd outlives its Popen object; keeping the object stops Python from warning
# that a child "is still running" when it is collected
_STARTED: list[subprocess.Popen[bytes]] = []


class Refused(Exception):
    """The call is not one the starter makes, or the node cannot start; the message says why."""


def config_path() -> Path:
    return Path(__file__).resolve().with_name("aipool-lab-power.json")


def load_config(path: Path) -> dict[str, Any]:
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise Refused(f"{path} must be a regular file of root's that only root may write")
    cfg: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return cfg


def _pid_file(cfg: dict[str, Any], node: str) -> Path:
    return Path(cfg["run"]) / f"{node}.pid"


def running(cfg: dict[str, Any], node: str) -> int | None:
    """The PID of the node's slurmd if it runs (its command line names slurmd and the node)."""
    try:
        pid = int(_pid_file(cfg, node).read_text().strip())
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, ValueError):
        return None
    if state == "Z" or b"slurmd" not in words or node.encode() not in words:
        return None
    return pid


def start(cfg: dict[str, Any], node: str) -> str:
    refuse = Path(cfg["refuse"])
    if refuse.is_file() and node in refuse.read_text().split():
        raise Refused(f"{node} does not power on (listed in {refuse})")
    if pid := running(cfg, node):
        return f"{node}: slurmd runs already (pid {pid})"
    log = Path(cfg["log"]) / f"slurmd-{node}.out"
    with log.open("ab") as out:
        proc = subprocess.Popen(  # an argv of the lab's own configuration
            cfg["nodes"][node],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=cfg["env"],
        )
    _STARTED.append(proc)
    pid_file = _pid_file(cfg, node)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{proc.pid}\n")
    return f"{node}: slurmd started (pid {proc.pid})"


def stop(cfg: dict[str, Any], node: str) -> str:
    pid = running(cfg, node)
    if pid is None:
        return f"{node}: slurmd is not running"
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while running(cfg, node) and time.monotonic() < deadline:
        time.sleep(0.1)
    if running(cfg, node):
        os.kill(pid, signal.SIGKILL)
    _pid_file(cfg, node).unlink(missing_ok=True)
    return f"{node}: slurmd stopped (pid {pid})"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(USAGE, file=sys.stderr)
        return 2
    action, node = argv
    try:
        cfg = load_config(config_path())
        if node not in cfg["nodes"]:
            raise Refused(f"{node} is not a power-saved node of this lab")
        print(start(cfg, node) if action == "start" else stop(cfg, node))
    except Refused as exc:
        print(f"aipool-lab-power: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
