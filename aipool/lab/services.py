"""The lab's AIPool services: everything a site runs beside Slurm.

- the policy daemon (``aipool policy run``) and the health checker (``aipool health run``),
- the portal with the demo tenants,
- the scheduled sacct import into the portal's database (``aipool accounting run``),
- the portal's control daemon (``aipool reconcile``): inference services' replica jobs and
  registry runs made what the portal's requests recorded,
- one node agent per lab node (``aipool node agent``): utilisation samples and health.

All run as the service user ``aipool`` (never root) from the job runtime's Python, but the
token service, which runs as ``aipool-token``: the JWT key is readable by root (the lab's
SlurmUser) and that user only, and the portal asks it for its users' tokens. Slurm knows
``aipool`` as an administrator (``lab up``); the one thing needing root, giving users their
directories, goes through the root helper (``aipool/roothelper.py``), which a sudoers rule
lets ``aipool`` run.

They are recorded in the same ledger as the Slurm daemons, so ``aipool lab down`` stops them
first (before the jobs are drained), ``aipool lab status`` lists them and ``aipool lab
services down`` stops only them.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from aipool import roothelper
from aipool.lab import daemons, host, metrics
from aipool.lab.cluster import Lab, Report, is_slurm_side
from aipool.lab.config import DEFAULT_ROOT, LabConfig

TOKEN_SERVICE = "token-service"  # noqa: S105 -- a ledger name
SERVICES = (
    "policy-daemon",
    "health-checker",
    TOKEN_SERVICE,
    "portal",
    "accounting-import",
    "reconciler",
)
AGENT_PREFIX = "agent-"
USER = host.SERVICE_USER  # every service runs as this user, never as root
DEMO_USERS = ("admin", "alice", "bob", "carol", "dave")
IMPORT_MINUTES = 2  # the scheduled sacct import's interval: usage shows up within this
RECONCILE_S = 20  # the control daemon's full passes (every service read from Slurm)
RECONCILE_POLL_S = 2  # … and its looks at the database for changes: a new service's delay
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


def helper_roots(cfg: LabConfig) -> list[Path]:
    """Where the portal keeps users' directories (its USER_DIRS and MODEL_WORK defaults)."""
    return [cfg.root / "portal" / "users", cfg.root / "portal" / "model-work"]


def agent_roots(cfg: LabConfig) -> list[Path]:
    """Where the as-the-user agent may act: users' and runs' directories, and the dataset
    store, whose workspaces users write (the portal's DATASET_STORAGE default)."""
    return [*helper_roots(cfg), cfg.root / "portal" / "datasets"]


def install_helper(cfg: LabConfig) -> Path:
    """The root helper as a site installs it: root's copy, its configuration beside it, and
    a sudoers rule that lets the service user run exactly that file, without a password."""
    path = cfg.root_helper
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    shutil.copyfile(roothelper.__file__, path)
    path.chmod(0o755)
    conf = {
        "roots": [str(r) for r in helper_roots(cfg)],
        "group": host.SERVICE_USER,
        "caller": host.SERVICE_USER,
        "audit": str(cfg.log / "helper-audit.log"),
        # the dataset store: its workspaces are removed whole, whoever wrote in them
        "stores": [str(cfg.root / "portal" / "datasets")],
        # the as-the-user agent, in the job runtime; where it may act for a user
        "agent": [str(cfg.runtime / "bin" / "python"), "-I", "-m", "asuser.agent"],
        "agent_roots": [str(r) for r in agent_roots(cfg)],
    }
    path.with_name("aipool-helper.json").write_text(json.dumps(conf, indent=2) + "\n")
    path.with_name("aipool-helper.json").chmod(0o644)
    host.install_sudoers(cfg.sudoers_file, path)
    return path


def service_python(cfg: LabConfig) -> str:
    """The Python the services run: the job runtime's, which the service user can read (a
    checkout may lie in a home nobody else enters); brought up to date with the checkout."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-runtime.sh"
    if script.is_file():
        done = subprocess.run(["bash", str(script), str(cfg.runtime)], check=False)
        if done.returncode != 0:
            raise daemons.LabError(f"could not bring the job runtime {cfg.runtime} up to date")
    return str(cfg.runtime / "bin" / "python")


def _reclaim_portal_home(home: Path) -> None:
    """The portal's own stores (models, datasets, …) back to the service user: a test or a
    command run as root with the lab's settings may have made them root's, and the portal
    (not root) must read them. Users' directories (``users``) and model work stay theirs."""
    for child in home.iterdir():
        if child.name in ("users", "model-work") or child.is_symlink() or not child.is_dir():
            continue
        if child.stat().st_uid == 0:
            for path in (child, *child.rglob("*")):
                if not path.is_symlink():
                    shutil.chown(path, host.SERVICE_USER, host.SERVICE_USER)


def up(lab: Lab, *, port: int | None = None) -> ServiceInfo:
    """Start every service that is not running, as the service user (not root); the portal
    (on ``port``, else the lab's own) first answers before we return."""
    port = lab.cfg.ports.portal if port is None else port
    if not lab.is_up():
        raise daemons.LabError("the lab is not up: run `aipool lab up` first")
    cfg, ledger, report = lab.cfg, lab.ledger(), Report()
    host.make_service_dir(cfg.root / "portal", 0o711)
    _reclaim_portal_home(cfg.root / "portal")
    for root in helper_roots(cfg):
        host.make_service_dir(root, 0o711)
    install_helper(cfg)
    home = host.make_service_dir(cfg.run / "aipool-home")
    env = _portal_env(cfg)
    python = service_python(cfg)

    scrape = {"AIPOOL_METRICS_TOKEN": metrics.portal_token(cfg)}  # every /metrics wants it

    def start(name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        return lab.start(
            ledger,
            report,
            name,
            [python, *argv[1:]],
            expect="aipool.cli",
            user=USER,
            env={"HOME": str(home), **scrape, **(env or {})},
            cwd=home,  # not the checkout: `python -m` would import from it
        )

    # the daemon's lab configuration names the default root: elsewhere only the portal runs
    daemons_too = cfg.root == DEFAULT_ROOT
    nodes = tuple(n.name for n in lab.inventory().nodes)
    scraped = metrics.targets(cfg, nodes, port, daemons=daemons_too)
    metrics.write_scrape_config(cfg, scraped)
    if daemons_too:
        policy = cfg.root / "policy"
        for d in (policy, policy / "util", policy / "samples"):
            host.make_service_dir(d, 0o755)
        conf = metrics.policy_daemon_config(cfg)
        start("policy-daemon", _aipool("policy", "run", "--config", str(conf)))
        start("health-checker", _aipool("health", "run", "--config", str(conf)))
        _agents(lab, start)
    _token_service(lab, ledger, report, python)  # before the portal: it asks for tokens
    argv = _aipool("portal", "--lab", "--demo", "--port", str(port))
    pid = start("portal", argv, env=env)
    url = f"http://127.0.0.1:{port}"
    daemons.wait_for(
        "portal", lambda: _answers(url), timeout=60, pid=pid, log=cfg.log / "portal.out"
    )
    # after the portal has made its database: both write to it
    every = str(IMPORT_MINUTES)
    argv = _aipool("accounting", "run", "--lab", "--db", portal_db(cfg), "--every-minutes", every)
    argv += ["--metrics", metrics.accounting_address(cfg), "--cluster", cfg.cluster]
    start("accounting-import", argv, env=env)
    every, poll = str(RECONCILE_S), str(RECONCILE_POLL_S)
    argv = _aipool("reconcile", "--lab", "--every", every, "--poll", poll)
    start("reconciler", argv, env=env)
    return ServiceInfo(url, Path(cfg.etc / "demo-passwords"), tuple(report.started))


def token_service(lab: Lab) -> Report:
    """Start the token service unless it runs: ``aipool lab up`` does, since whatever submits
    as a user through slurmrestd asks it (the site's portal and the tests' own portals), as
    slurmrestd itself is up with the lab."""
    report = Report()
    _token_service(lab, lab.ledger(), report, service_python(lab.cfg))
    return report


def _token_service(lab: Lab, ledger: dict[str, Any], report: Report, python: str) -> None:
    """The token service (:mod:`slurm_plugins.tokens`) as its own user, the JWT key's one
    reader but Slurm: it mints the portal's users' slurmrestd tokens, for ``aipool`` only."""
    cfg = lab.cfg
    host.give_key_to_token_service(cfg.jwt_key)  # also a lab made before the token service
    lab.client.ensure_admin_level(host.TOKEN_USER, "Operator")  # it reads every admin level
    sock, audit = host.token_socket(cfg), cfg.log / host.TOKEN_USER
    for d, group, mode in ((sock.parent, USER, 0o2750), (audit, host.TOKEN_USER, 0o750)):
        d.mkdir(exist_ok=True)
        shutil.chown(d, host.TOKEN_USER, group)  # the socket's: only the portal's group enters
        d.chmod(mode)
    argv = [python, "-m", "slurm_plugins.tokens", "--key", str(cfg.jwt_key), "--socket"]
    argv += [str(sock), "--caller", USER, "--audit", str(audit / "audit.log")]
    argv += ["--refuse", cfg.rest_user, "--max-lifespan", "600", "--refresh", "15"]
    pid = lab.start(
        ledger, report, TOKEN_SERVICE, argv, expect="slurm_plugins.tokens", user=host.TOKEN_USER
    )
    log = cfg.log / f"{TOKEN_SERVICE}.out"
    daemons.wait_for(TOKEN_SERVICE, sock.is_socket, timeout=30, pid=pid, log=log)


def _agents(lab: Lab, start: Callable[..., int]) -> None:
    """A node agent per lab node, as a site runs one on every compute node. The lab's cards
    are device files with no load: a job's CPU load stands in for its cards' (``lab:`` source;
    ``<policy>/util/<job id>`` overrides it). Each serves ``/metrics`` on its lab port."""
    policy = lab.cfg.root / "policy"
    # the agents run as the service user: a copy it may read (the checkout may be in a home)
    inventory = lab.cfg.etc / "inventory.yaml"
    shutil.copyfile(lab.cfg.inventory, inventory)
    inventory.chmod(0o644)
    for index, node in enumerate(lab.inventory().nodes):
        argv = _aipool(
            "node",
            "agent",
            "--node",
            node.name,
            "--source",
            f"lab:{policy / 'util'}",
            "--out",
            str(policy / "samples"),
            "--inventory",
            str(inventory),
            "--interval",
            str(AGENT_S),
            "--metrics",
            metrics.agent_address(lab.cfg, index),
            "--cluster",
            lab.cfg.cluster,
        )
        start(f"{AGENT_PREFIX}{node.name}", argv)


def names(lab: Lab) -> list[str]:
    """The services the ledger lists (AIPool's, not Slurm's)."""
    return [n for n in lab.ledger()["daemons"] if not is_slurm_side(n)]


def down(lab: Lab) -> list[str]:
    """Stop AIPool's services but the token service: like slurmrestd, whose tokens it mints,
    it serves whatever submits as a user on the lab (the integration tests' own portals, run
    while the site's services are down); ``aipool lab down`` stops it with the rest."""
    return lab.stop_named(tuple(n for n in names(lab) if n != TOKEN_SERVICE))


def _answers(url: str) -> bool:
    try:
        httpx.get(f"{url}/login", timeout=2)
    except httpx.HTTPError:
        return False
    return True
