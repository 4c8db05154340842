"""The lab's metrics addresses and the Prometheus configuration rendered from them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from aipool.lab import metrics
from aipool.lab.config import LabConfig
from plumbing.address import parse_address
from slurm_plugins.policy.config import LAB_CONFIG, load_config
from tests.unit.prometheus.promtool import check_config

NODES = ("gpu1", "gpu2", "npu1", "npu2", "cpu1")


def lab(tmp_path: Path, offset: int = 0) -> LabConfig:
    env = {"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_PORT_OFFSET": str(offset)}
    return LabConfig.from_env(env)


def addresses(found: tuple[metrics.Target, ...]) -> dict[str, str]:
    return {t.service: t.address for t in found}


def test_every_service_has_its_own_loopback_port_moved_with_the_lab(tmp_path: Path) -> None:
    base = addresses(metrics.targets(lab(tmp_path), NODES, 8080, daemons=True))
    assert base["policy-daemon"] == "127.0.0.1:9101"
    assert base["health-checker"] == "127.0.0.1:9103"
    assert base["accounting-import"] == "127.0.0.1:9104"
    assert [base[f"agent-{n}"] for n in NODES] == [f"127.0.0.1:{9111 + i}" for i in range(5)]
    assert base["portal"] == "127.0.0.1:8080"
    assert len(set(base.values())) == len(base)
    side = addresses(metrics.targets(lab(tmp_path, 200), NODES, 8080, daemons=True))
    assert side["policy-daemon"] == "127.0.0.1:9301"
    assert side["agent-cpu1"] == "127.0.0.1:9315"
    # clear of the Slurm daemons' ports, the slurmd ones included
    p = lab(tmp_path).ports
    slurm = {p.slurmctld, p.slurmdbd, p.slurmrestd, p.mariadb}
    slurm |= set(range(p.slurmd_base, p.slurmd_base + len(NODES)))
    assert not slurm & {int(a.rsplit(":", 1)[1]) for a in base.values()}


def test_a_lab_elsewhere_scrapes_only_its_portal_and_import(tmp_path: Path) -> None:
    found = metrics.targets(lab(tmp_path), NODES, 8081, daemons=False)
    assert [(t.service, t.job) for t in found] == [
        ("portal", "aipool-portal"),
        ("accounting-import", "aipool-accounting"),
    ]


def test_the_scrape_config_names_every_target_and_the_scrape_token(tmp_path: Path) -> None:
    cfg = lab(tmp_path)
    found = metrics.targets(cfg, NODES, 8080, daemons=True)
    path = metrics.write_scrape_config(cfg, found)
    doc = yaml.safe_load(path.read_text())
    jobs = {s["job_name"]: s for s in doc["scrape_configs"]}
    assert set(jobs) == {
        "aipool-policy",
        "aipool-health",
        "aipool-accounting",
        "aipool-node",
        "aipool-portal",
    }
    assert jobs["aipool-node"]["static_configs"][0]["targets"] == [
        metrics.agent_address(cfg, i) for i in range(len(NODES))
    ]
    for scrape in jobs.values():  # every service of the lab asks for the scrape token
        auth = scrape["authorization"]
        assert auth == {"type": "Bearer", "credentials_file": str(metrics.token_file(cfg))}
    rules = Path(doc["rule_files"][0])
    assert rules.read_text() == metrics.SHIPPED_RULES.read_text()
    assert metrics.endpoints(cfg) == {
        "scrape_config": str(path),
        "jobs": {j: s["static_configs"][0]["targets"] for j, s in jobs.items()},
    }


def test_the_rendered_config_passes_promtool(tmp_path: Path) -> None:
    cfg = lab(tmp_path)
    metrics.portal_token(cfg)  # the file the portal's job names must exist
    path = metrics.write_scrape_config(cfg, metrics.targets(cfg, NODES, 8080, daemons=True))
    out = check_config(path)
    assert "SUCCESS" in out


def test_the_portal_token_is_made_once_and_kept_private(tmp_path: Path) -> None:
    cfg = lab(tmp_path)
    first = metrics.portal_token(cfg)
    assert first.startswith("aipool-")
    assert len(first) > 30
    assert metrics.portal_token(cfg) == first
    assert metrics.token_file(cfg).stat().st_mode & 0o007 == 0


def test_no_rendered_config_no_endpoints(tmp_path: Path) -> None:
    assert metrics.endpoints(lab(tmp_path)) == {}


def test_the_policy_daemon_config_serves_at_the_lab_address(tmp_path: Path) -> None:
    cfg = lab(tmp_path, 100)
    (tmp_path / "etc").mkdir()
    loaded = load_config(metrics.policy_daemon_config(cfg))
    assert loaded.metrics is not None
    assert loaded.metrics.address == parse_address("127.0.0.1:9201")
    assert loaded.metrics.cluster == cfg.cluster
    assert loaded.health is not None
    assert loaded.health.metrics == parse_address("127.0.0.1:9203")
    plain = replace(loaded, metrics=None, health=replace(loaded.health, metrics=None))
    assert plain == load_config(LAB_CONFIG)  # the rest unchanged


@pytest.mark.parametrize(
    "service", ["policy-daemon", "health-checker", "accounting-import", "agent-gpu1", "portal"]
)
def test_status_lists_where_each_service_is_scraped(tmp_path: Path, service: str) -> None:
    cfg = lab(tmp_path)
    found = metrics.targets(cfg, NODES, 8080, daemons=True)
    metrics.write_scrape_config(cfg, found)
    listed = {a for where in metrics.endpoints(cfg)["jobs"].values() for a in where}
    assert addresses(found)[service] in listed
