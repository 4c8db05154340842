"""Where the lab's AIPool services serve ``/metrics``, and Prometheus's view of them.

``aipool lab services up`` gives each service it starts a loopback address on the lab's own
ports (:class:`~aipool.lab.config.LabPorts`, moved with the lab's port offset): the policy
daemon ``policy_metrics`` and the health checker ``health_metrics`` (their configuration
file, rendered here from the lab's, says so), the accounting import ``accounting_metrics``
and each node agent ``agent_metrics_base`` + its place in the inventory (``--metrics``), and
the portal its own port; every one of them behind the lab's scrape token
(``AIPOOL_METRICS_TOKEN`` in their environment). From the same addresses it renders a Prometheus
configuration, ``<root>/etc/prometheus/prometheus.yml``, with the shipped rules beside it:

    prometheus --config.file=<root>/etc/prometheus/prometheus.yml ...

The token file is root's and readable by the group of Debian's ``prometheus`` user, which
runs Prometheus; the services get the token in their environment.
"""

from __future__ import annotations

import grp
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aipool.lab.config import LabConfig

#: Debian's ``prometheus`` package runs Prometheus as this user (and group)
PROMETHEUS_USER = "prometheus"
#: the rules a site installs beside its Prometheus (docs/operations.md)
SHIPPED_RULES = Path(__file__).resolve().parents[2] / "ops" / "prometheus" / "aipool.rules.yml"
#: the lab's scrape interval: short, so that a change shows within seconds
SCRAPE_INTERVAL = "5s"
POLICY_JOB, HEALTH_JOB, NODE_JOB = "aipool-policy", "aipool-health", "aipool-node"
ACCOUNTING_JOB, PORTAL_JOB = "aipool-accounting", "aipool-portal"


@dataclass(frozen=True, slots=True)
class Target:
    """One ``/metrics`` of the lab: the service (its ledger name), its scrape job, where."""

    service: str
    job: str
    address: str


def policy_address(cfg: LabConfig) -> str:
    return f"{cfg.address}:{cfg.ports.policy_metrics}"


def health_address(cfg: LabConfig) -> str:
    return f"{cfg.address}:{cfg.ports.health_metrics}"


def accounting_address(cfg: LabConfig) -> str:
    return f"{cfg.address}:{cfg.ports.accounting_metrics}"


def agent_address(cfg: LabConfig, index: int) -> str:
    """The node agent of the ``index``-th node of the inventory."""
    return f"{cfg.address}:{cfg.ports.agent_metrics_base + index}"


def targets(
    cfg: LabConfig, nodes: tuple[str, ...], portal_port: int, *, daemons: bool
) -> tuple[Target, ...]:
    """What the lab's services serve: the portal and the accounting import, and with
    ``daemons`` the policy daemon, the health checker and one node agent per node (``nodes``
    in the inventory's order)."""
    out = [
        Target("portal", PORTAL_JOB, f"{cfg.address}:{portal_port}"),
        Target("accounting-import", ACCOUNTING_JOB, accounting_address(cfg)),
    ]
    if daemons:
        out.append(Target("policy-daemon", POLICY_JOB, policy_address(cfg)))
        out.append(Target("health-checker", HEALTH_JOB, health_address(cfg)))
        out += [Target(f"agent-{n}", NODE_JOB, agent_address(cfg, i)) for i, n in enumerate(nodes)]
    return tuple(out)


def directory(cfg: LabConfig) -> Path:
    return cfg.etc / "prometheus"


def config_file(cfg: LabConfig) -> Path:
    return directory(cfg) / "prometheus.yml"


def token_file(cfg: LabConfig) -> Path:
    return directory(cfg) / "portal.token"


def portal_token(cfg: LabConfig) -> str:
    """The scrape token of the portal and the lab's other services, made once per lab:
    root's file, readable by the group of the ``prometheus`` user where Debian's package
    made one (else by root only)."""
    path = token_file(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    if not path.exists():
        # a prefix keeps it a string where the portal reads AIPOOL_* variables as JSON
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"aipool-{secrets.token_urlsafe(32)}")
    try:
        gid = grp.getgrnam(PROMETHEUS_USER).gr_gid
    except KeyError:
        pass
    else:
        os.chown(path, 0, gid)
        path.chmod(0o640)
    return path.read_text().strip()


def scrape_config(
    cfg: LabConfig,
    found: tuple[Target, ...],
    *,
    interval: str = SCRAPE_INTERVAL,
    rules: Path | None = None,
) -> dict[str, Any]:
    """A Prometheus configuration scraping ``found``: one job per kind of service, each with
    the scrape token (``credentials_file``): every service of the lab asks for it, as the
    figures per tenant are not for every local user."""
    jobs: dict[str, list[str]] = {}
    for t in found:
        jobs.setdefault(t.job, []).append(t.address)
    scrapes: list[dict[str, Any]] = []
    for job, addresses in jobs.items():
        scrape: dict[str, Any] = {"job_name": job, "static_configs": [{"targets": addresses}]}
        scrape["authorization"] = {"type": "Bearer", "credentials_file": str(token_file(cfg))}
        scrapes.append(scrape)
    doc: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
    }
    if rules is not None:
        doc["rule_files"] = [str(rules)]
    doc["scrape_configs"] = scrapes
    return doc


def write_scrape_config(cfg: LabConfig, found: tuple[Target, ...]) -> Path:
    """``<root>/etc/prometheus/prometheus.yml`` (and the shipped rules beside it, where this
    checkout has them), readable by everyone: the secret is in the token file."""
    d = directory(cfg)
    d.mkdir(parents=True, exist_ok=True)
    rules: Path | None = None
    if SHIPPED_RULES.is_file():
        rules = d / SHIPPED_RULES.name
        shutil.copyfile(SHIPPED_RULES, rules)
        rules.chmod(0o644)
    doc = scrape_config(cfg, found, rules=rules)
    head = "# The lab's Prometheus configuration, rendered by `aipool lab services up`.\n"
    path = config_file(cfg)
    path.write_text(head + yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o644)
    return path


def policy_daemon_config(cfg: LabConfig) -> Path:
    """The lab's policy daemon configuration with the daemon's ``metrics`` and the health
    checker's ``health.metrics`` (it reads the same file) at the lab's addresses."""
    from slurm_plugins.policy.config import LAB_CONFIG  # the daemon's modules: only here

    doc = yaml.safe_load(LAB_CONFIG.read_text())
    doc["metrics"] = {"address": policy_address(cfg), "cluster": cfg.cluster}
    doc["health"] = {**(doc.get("health") or {}), "metrics": health_address(cfg)}
    path = cfg.etc / "policy-daemon.yaml"
    head = f"# {LAB_CONFIG.name} with the lab's metrics address (`aipool lab services up`).\n"
    path.write_text(head + yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o644)
    return path


def endpoints(cfg: LabConfig) -> dict[str, Any]:
    """What ``aipool lab status`` shows: the rendered configuration and its targets per job
    (nothing before the first ``services up``)."""
    path = config_file(cfg)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    jobs = {
        s["job_name"]: [t for sc in s.get("static_configs", []) for t in sc.get("targets", [])]
        for s in doc.get("scrape_configs", [])
    }
    return {"scrape_config": str(path), "jobs": jobs}
