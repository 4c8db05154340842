"""The lab's AIPool services: the policy daemon and the portal, started beside Slurm.

They are recorded in the same ledger as the Slurm daemons, so ``aipool lab down`` stops them
first (before the jobs are drained) and ``aipool lab services down`` stops only them.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from aipool.lab import daemons, host
from aipool.lab.cluster import Lab, Report
from aipool.lab.config import DEFAULT_ROOT

SERVICES = ("policy-daemon", "portal")
DEMO_USERS = ("admin", "alice", "bob", "carol", "dave")


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    portal_url: str
    passwords_file: Path
    started: tuple[str, ...]


def _aipool(*args: str) -> list[str]:
    """The ``aipool`` command of this very environment (same interpreter, same packages)."""
    return [sys.executable, "-m", "aipool.cli", *args]


def up(lab: Lab, *, port: int = 8080) -> ServiceInfo:
    """Start the policy daemon and the portal (with the demo tenants) if not running."""
    if not lab.is_up():
        raise daemons.LabError("the lab is not up: run `aipool lab up` first")
    cfg, ledger, report = lab.cfg, lab.ledger(), Report()
    portal_dir = cfg.root / "portal"
    portal_dir.mkdir(exist_ok=True)
    secret, passwords = cfg.etc / "portal_secret", cfg.etc / "demo-passwords"
    if not secret.exists():
        host.write_private(secret, secrets.token_hex(32))
    if not passwords.exists():
        host.write_private(
            passwords, "".join(f"{u} {secrets.token_urlsafe(9)}\n" for u in DEMO_USERS)
        )
    env = {
        "AIPOOL_SECRET_KEY": secret.read_text().strip(),
        "AIPOOL_DATABASE_URL": f"sqlite:///{portal_dir / 'portal.db'}",
        "AIPOOL_LAB_DIR": str(cfg.root),
    }
    for line in passwords.read_text().splitlines():
        user, _, password = line.partition(" ")
        env[f"AIPOOL_DEMO_PASSWORD_{user.upper()}"] = password
    if cfg.root == DEFAULT_ROOT:  # the daemon's lab configuration names this root
        lab.start(ledger, report, "policy-daemon", _aipool("policy", "run"), expect="aipool.cli")
    pid = lab.start(
        ledger,
        report,
        "portal",
        _aipool("portal", "--lab", "--demo", "--port", str(port)),
        expect="aipool.cli",
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    daemons.wait_for(
        "portal", lambda: _answers(url), timeout=60, pid=pid, log=cfg.log / "portal.out"
    )
    return ServiceInfo(url, passwords, tuple(report.started))


def down(lab: Lab) -> list[str]:
    return lab.stop_named(SERVICES)


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/login", timeout=2)
    except httpx.HTTPError:
        return False
    return True
