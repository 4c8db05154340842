"""The lab's AIPool services: everything a site runs beside Slurm.

- the policy daemon (``aipool policy run``) and the health checker (``aipool health run``),
- the portal with the demo tenants,
- the scheduled sacct import into the portal's database (``aipool accounting run``),
- the inference reconciler on a timer (``aipool inference reconcile``),
- one node agent per lab node (``aipool policy agent``): utilisation samples and health.

They are recorded in the same ledger as the Slurm daemons, so ``aipool lab down`` stops them
first (before the jobs are drained), ``aipool lab status`` lists them and ``aipool lab
services down`` stops only them.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from aipool.lab import daemons, host
from aipool.lab.cluster import Lab, Report, is_slurm_side
from aipool.lab.config import DEFAULT_ROOT, LabConfig

SERVICES = (
    "policy-daemon",
    "health-checker",
    "portal",
    "accounting-import",
    "inference-reconciler",
)
AGENT_PREFIX = "agent-"
DEMO_USERS = ("admin", "alice", "bob", "carol", "dave")
IMPORT_MINUTES = 2  # the scheduled sacct import's interval: usage shows up within this
RECONCILE_S = 20  # the inference reconciler's interval
AGENT_S = 10  # node agents' sampling interval


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    portal_url: str
    passwords_file: Path
    started: tuple[str, ...]


def _aipool(*args: str) -> list[str]:
    """The ``aipool`` command of this very environment (same interpreter, same packages)."""
    return [sys.executable, "-m", "aipool.cli", *args]


def portal_db(cfg: LabConfig) -> str:
    """The portal's database: its one home is under the lab's root, wiped with the lab."""
    return f"sqlite:///{cfg.root / 'portal' / 'portal.db'}"


def _portal_env(cfg: LabConfig) -> dict[str, str]:
    """What the portal and the processes sharing its database need: secret, database, logins."""
    secret, passwords = cfg.etc / "portal_secret", cfg.etc / "demo-passwords"
    if not secret.exists():
        host.write_private(secret, secrets.token_hex(32))
    if not passwords.exists():
        host.write_private(
            passwords, "".join(f"{u} {secrets.token_urlsafe(9)}\n" for u in DEMO_USERS)
        )
    env = {
        "AIPOOL_SECRET_KEY": secret.read_text().strip(),
        "AIPOOL_DATABASE_URL": portal_db(cfg),
        "AIPOOL_LAB_DIR": str(cfg.root),
    }
    for line in passwords.read_text().splitlines():
        user, _, password = line.partition(" ")
        env[f"AIPOOL_DEMO_PASSWORD_{user.upper()}"] = password
    return env


def up(lab: Lab, *, port: int = 8080) -> ServiceInfo:
    """Start every service that is not running; the portal first answers before we return."""
    if not lab.is_up():
        raise daemons.LabError("the lab is not up: run `aipool lab up` first")
    cfg, ledger, report = lab.cfg, lab.ledger(), Report()
    (cfg.root / "portal").mkdir(exist_ok=True)
    env = _portal_env(cfg)
    if cfg.root == DEFAULT_ROOT:  # the daemon's lab configuration names this root
        lab.start(ledger, report, "policy-daemon", _aipool("policy", "run"), expect="aipool.cli")
        lab.start(ledger, report, "health-checker", _aipool("health", "run"), expect="aipool.cli")
        _agents(lab, ledger, report)
    argv = _aipool("portal", "--lab", "--demo", "--port", str(port))
    pid = lab.start(ledger, report, "portal", argv, expect="aipool.cli", env=env)
    url = f"http://127.0.0.1:{port}"
    daemons.wait_for(
        "portal", lambda: _answers(url), timeout=60, pid=pid, log=cfg.log / "portal.out"
    )
    # after the portal has made its database: both write to it
    every = str(IMPORT_MINUTES)
    argv = _aipool("accounting", "run", "--lab", "--db", portal_db(cfg), "--every-minutes", every)
    lab.start(ledger, report, "accounting-import", argv, expect="aipool.cli", env=env)
    argv = _aipool("inference", "reconcile", "--lab", "--every", str(RECONCILE_S))
    lab.start(ledger, report, "inference-reconciler", argv, expect="aipool.cli", env=env)
    return ServiceInfo(url, Path(cfg.etc / "demo-passwords"), tuple(report.started))


def _agents(lab: Lab, ledger: dict[str, Any], report: Report) -> None:
    """A node agent per lab node, as a site runs one on every compute node. The lab's cards
    are device files with no load: a job's CPU load stands in for its cards' (``lab:`` source;
    ``<policy>/util/<job id>`` overrides it)."""
    policy = lab.cfg.root / "policy"
    for d in (policy / "util", policy / "samples"):
        d.mkdir(parents=True, exist_ok=True)
    for node in lab.inventory().nodes:
        argv = _aipool(
            "policy",
            "agent",
            "--node",
            node.name,
            "--source",
            f"lab:{policy / 'util'}",
            "--out",
            str(policy / "samples"),
            "--inventory",
            str(lab.cfg.inventory),
            "--interval",
            str(AGENT_S),
        )
        lab.start(ledger, report, f"{AGENT_PREFIX}{node.name}", argv, expect="aipool.cli")


def names(lab: Lab) -> list[str]:
    """The services the ledger lists (AIPool's, not Slurm's)."""
    return [n for n in lab.ledger()["daemons"] if not is_slurm_side(n)]


def down(lab: Lab) -> list[str]:
    return lab.stop_named(tuple(names(lab)))


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/login", timeout=2)
    except httpx.HTTPError:
        return False
    return True
