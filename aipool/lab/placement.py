"""A placement daemon of one's own on the lab, for the lab tests and benchmarks.

The lab's admission hook defers GPU and NPU jobs while the heartbeat beside its table is
fresh (``slurm_plugins/admission/lab-policy.yaml``); the daemon that beats must then pin and
start every such job. :func:`daemon` runs one as the service user (as ``aipool lab services
up`` does), with the lab's placement settings, a state directory of its own and the
policies asked for, and stops it at the end. It refuses to run beside the lab services' own
daemon: two daemons would steer the same jobs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aipool.lab import host, services
from aipool.lab.cluster import Lab
from slurm_plugins.admission.config import LAB_POLICY, load_policy

SERVICE = "policy-daemon"


def heartbeat(lab: Lab) -> Path:
    """The file the lab's admission hook watches (named in the lab policy)."""
    placement = load_policy(LAB_POLICY).cluster.placement
    if placement is None:
        raise RuntimeError(f"{LAB_POLICY} defers no jobs: it has no cluster.placement")
    return lab.cfg.admission / placement.heartbeat


def services_daemon_running(lab: Lab) -> bool:
    ledger = lab.ledger()
    entry = ledger["daemons"].get(SERVICE)
    if entry is None:
        return False
    try:
        os.kill(int(entry["pid"]), 0)
    except (OSError, ValueError):
        return False
    return True


def config(
    lab: Lab,
    state_dir: Path,
    policies: Sequence[dict[str, Any]] = ({"name": "fifo"}, {"name": "placement"}),
    **extra: Any,
) -> dict[str, Any]:
    """A daemon configuration steering every job of the lab (the hook defers them all)."""
    return {
        "interval": 10,
        "state_dir": str(state_dir),
        "slurm_conf": lab.cfg.env()["SLURM_CONF"],
        "usage": {"window": "1h", "refresh": "60s"},
        "notify": {"log": True, "file": None},
        "placement": {"heartbeat": str(heartbeat(lab)), "watch": "0.25s"},
        "policies": list(policies),
        **extra,
    }


@dataclass
class Running:
    """A daemon started by :func:`daemon`: its process and its directory (configuration,
    state, log), which the service user can reach."""

    proc: subprocess.Popen[bytes]
    workdir: Path

    @property
    def log(self) -> Path:
        return self.workdir / "daemon.log"

    def kill(self) -> None:
        """SIGKILL: the daemon dies mid-whatever, as in a crash (its heartbeat stops)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def daemon(
    lab: Lab,
    policies: Sequence[dict[str, Any]] = ({"name": "fifo"}, {"name": "placement"}),
    **extra: Any,
) -> Iterator[Running]:
    """``aipool policy run`` as the service user until the block ends (then SIGTERM; its
    heartbeat is left to lapse), in a directory of its own under the lab's job area."""
    if services_daemon_running(lab):
        raise RuntimeError("the lab services' policy daemon is running: `aipool lab services down`")
    workdir = host.make_service_dir(
        Path(tempfile.mkdtemp(prefix="placement-", dir=lab.cfg.jobs)), 0o755
    )
    doc = config(lab, workdir / "state", policies, **extra)
    path = workdir / "daemon.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=True))
    path.chmod(0o644)
    user = host.SERVICE_USER
    # the job runtime's Python, as the lab services use: the checkout may lie in a home
    # (/root in a fresh machine) that the service user cannot enter
    python = services.service_python(lab.cfg)
    argv = [  # setpriv execs: the process is the daemon itself, to signal and to kill
        "setpriv",
        f"--reuid={user}",
        f"--regid={user}",
        "--init-groups",
        python,
        "-m",
        "slurm_plugins.policy",
        "-v",
        "run",
        "--config",
        str(path),
    ]
    with (workdir / "daemon.log").open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)
    running = Running(proc, workdir)
    try:
        yield running
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                running.kill()
    shutil.rmtree(workdir, ignore_errors=True)  # kept (with its log) when the block failed
