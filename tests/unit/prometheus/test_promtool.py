"""promtool on everything shipped for Prometheus: the rules, the example configuration, and the
exposition text each part's ``/metrics`` serves (rendered from its registry, with figures in
every family that has any)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import Engine

from accounting.ingest import ingest
from accounting.metrics import AccountingMetrics
from slurm_plugins.client import SlurmClient
from slurm_plugins.health.metrics import HealthMetrics
from slurm_plugins.node.agent import Agent
from slurm_plugins.node.metrics import NodeMetrics
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.daemon import Daemon
from slurm_plugins.policy.metrics import PolicyMetrics
from tests.unit.accounting.builders import acct
from tests.unit.accounting.conftest import engine, migrated_db  # noqa: F401 (fixtures)
from tests.unit.accounting.test_ingest import usages
from tests.unit.metrics.test_health_metrics import FakeSlurm, checker
from tests.unit.metrics.test_node_agent_wiring import CardsSource
from tests.unit.policy.test_policy_daemon import NOW, recorded
from tests.unit.portal.conftest import make_app
from tests.unit.prometheus.promtool import check, check_config, check_metrics, promtool

OPS = Path(__file__).resolve().parents[3] / "ops" / "prometheus"
TOKEN = "scrape-token-for-the-test"


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_promtool_objects_to_a_bad_exposition() -> None:
    bad = (
        "# HELP aipool_things_bytes x\n# TYPE aipool_things_bytes counter\naipool_things_bytes 1\n"
    )
    done = subprocess.run(
        [promtool(), "check", "metrics"], input=bad, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "_total" in done.stdout + done.stderr


@pytest.mark.parametrize("rules", sorted(OPS.glob("*.rules.yml")), ids=lambda p: p.name)
def test_the_shipped_rules(rules: Path) -> None:
    out = check("rules", str(rules))
    assert "SUCCESS" in out


def test_the_shipped_rules_are_there() -> None:
    assert sorted(OPS.glob("*.rules.yml")), f"no *.rules.yml under {OPS}"


def test_the_shipped_configuration(tmp_path: Path) -> None:
    shipped = OPS / "prometheus.yml"
    assert "SUCCESS" in check_config(shipped, syntax_only=True)
    # the files it names, moved here: the rules load and the token is found
    doc = yaml.safe_load(shipped.read_text())
    doc["rule_files"] = [str(OPS / Path(r).name) for r in doc["rule_files"]]
    token = tmp_path / "portal.token"
    token.write_text(TOKEN)
    for scrape in doc["scrape_configs"]:
        if "authorization" in scrape:
            scrape["authorization"]["credentials_file"] = str(token)
    local = tmp_path / "prometheus.yml"
    local.write_text(yaml.safe_dump(doc))
    out = check_config(local)
    assert "SUCCESS" in out
    assert all(str(OPS / Path(r).name) in out for r in doc["rule_files"])


def test_the_policy_daemons_metrics(tmp_path: Path) -> None:
    doc = {
        "state_dir": str(tmp_path / "state"),
        "policies": [{"name": "priority", "weight": 2}, {"name": "fair"}, {"name": "capacity"}],
        "metrics": {"address": "127.0.0.1:0", "cluster": "lab"},
    }
    daemon = Daemon(parse_config(doc), SlurmClient(recorded([])), clock=lambda: NOW)  # type: ignore[arg-type]
    assert daemon.cycle() is not None
    text = exposition(cast(PolicyMetrics, daemon.metrics).registry)
    assert 'aipool_node_cards{cluster="lab"' in text  # the pool read, not only counters
    check_metrics(text)


def test_the_node_agents_metrics(tmp_path: Path) -> None:
    metrics = NodeMetrics()
    Agent(CardsSource(), tmp_path, "gpu1", metrics=metrics, cluster="lab").run_once()
    text = exposition(metrics.registry)
    assert "aipool_card_utilisation_ratio{" in text
    check_metrics(text)


def test_the_portals_metrics(tmp_path: Path) -> None:
    client = make_app(tmp_path / "portal.db", tmp_path, METRICS_TOKEN=TOKEN).test_client()
    client.get("/login")
    client.get("/no/such/page")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    client.get("/metrics", headers=auth)
    resp = client.get("/metrics", headers=auth)
    assert resp.status_code == 200
    text = resp.get_data(as_text=True)
    assert "aipool_portal_request_seconds_bucket{" in text
    check_metrics(text)


def test_the_health_checkers_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = HealthMetrics("lab")
    metrics.checked(checker(tmp_path, FakeSlurm(), monkeypatch).check(), 0.2)
    text = exposition(metrics.registry)
    assert "aipool_health_nodes{" in text
    check_metrics(text)


def test_the_accounting_imports_metrics(engine: Engine) -> None:  # noqa: F811
    metrics = AccountingMetrics(engine, "lab")
    rows: Any = usages(acct(1, "cpu=2,gres/gpu=2,gres/gpu:a100=2", hours=2))
    metrics.measure(lambda: ingest(engine, rows))
    text = exposition(metrics.registry)
    assert "aipool_accounting_imports_total{" in text
    check_metrics(text)
