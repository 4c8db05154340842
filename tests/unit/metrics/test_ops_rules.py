"""The shipped Prometheus rules and Grafana dashboard use only names the code exports, and
docs/operations.md lists exactly those: a renamed metric breaks this test."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.metrics_core import Metric

from portal.metrics import Access, PortalMetrics
from slurm_plugins.node.metrics import CardView, card_families
from slurm_plugins.policy.metrics import PolicyMetrics
from tests.unit.metrics.test_node_metrics import DEVICES
from tests.unit.metrics.test_pool import _view

TOP = Path(__file__).resolve().parents[3]
RULES = TOP / "ops" / "prometheus" / "aipool.rules.yml"
SCRAPE = TOP / "ops" / "prometheus" / "prometheus.yml"
DASHBOARD = TOP / "ops" / "grafana" / "pool-overview.json"
DOCS = TOP / "docs" / "operations.md"
#: a PromQL identifier: a metric name, a recorded name (with colons), a label or a function
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
#: series a histogram or counter family exposes besides its own name
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def exported() -> list[Metric]:
    """Every family the code exports: the pool's, the policy daemon's, the node agent's and
    the portal's, each from its own collector."""
    from slurm_plugins.common.poolmetrics import pool_families

    families = [*pool_families(_view()), *card_families(CardView("lab", "n1", DEVICES))]
    families += PolicyMetrics().registry.collect()
    families += PortalMetrics(Access(None, ())).registry.collect()
    return families


def series_names() -> set[str]:
    out = set()
    for f in exported():
        out.update(f.name + s for s in SUFFIXES.get(f.type, ("",)))
    return out


def documented() -> set[str]:
    """The names in operations.md's tables, ``aipool_{a,b}_x`` expanded."""
    out = set()
    for raw in re.findall(r"`(aipool_[a-z{][a-z0-9_{},]*)`", DOCS.read_text()):
        parts = re.split(r"\{([^}]*)\}", raw)
        choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
        out.update("".join(c) for c in itertools.product(*choices))
    return out


def names_in(expr: str) -> tuple[set[str], set[str]]:
    """(aipool_ metric names, recorded level:metric:op names) an expression uses; label
    values in quotes are left out."""
    bare = re.sub(r'"[^"]*"', '""', expr)
    idents = set(IDENT.findall(bare))
    return {i for i in idents if i.startswith("aipool_")}, {i for i in idents if ":" in i}


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def test_every_rule_uses_exported_names_only() -> None:
    known = series_names()
    recorded = {r["record"] for r in rules() if "record" in r}
    assert all(n.count(":") == 2 for n in recorded), recorded  # level:metric:operations
    for rule in rules():
        metrics, records = names_in(rule["expr"])
        assert metrics or records or rule["expr"].startswith("up{"), rule
        assert metrics <= known, (rule.get("record") or rule["alert"], metrics - known)
        assert records <= recorded, (rule.get("record") or rule["alert"], records - recorded)


def test_the_alerts_the_operators_asked_for() -> None:
    alerts = {r["alert"]: r for r in rules() if "alert" in r}
    assert {
        "AIPoolPolicyCyclesFailing",
        "AIPoolPolicyNoCycle",
        "AIPoolCardHot",
        "AIPoolFragmentationHigh",
    } <= set(alerts)
    for rule in alerts.values():
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]


def test_the_dashboard_is_grafana_json_over_our_names() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert isinstance(dash["schemaVersion"], int)
    assert dash["uid"]
    assert dash["title"]
    assert dash["panels"]
    known = series_names()
    recorded = {r["record"] for r in rules() if "record" in r}
    for panel in dash["panels"]:
        assert panel["title"], panel
        assert panel["targets"], panel
        for target in panel["targets"]:
            metrics, records = names_in(target["expr"])
            assert metrics <= known, (panel["title"], metrics - known)
            assert records <= recorded, (panel["title"], records - recorded)
            assert metrics or records


def test_the_scrape_example_loads_the_rules() -> None:
    doc = yaml.safe_load(SCRAPE.read_text())
    assert any(f.endswith(RULES.name) for f in doc["rule_files"])
    jobs = {j["job_name"] for j in doc["scrape_configs"]}
    assert {"aipool-policy", "aipool-node", "aipool-portal"} <= jobs


def test_the_docs_list_exactly_what_the_code_exports() -> None:
    code = {f.name + ("_total" if f.type == "counter" else "") for f in exported()}
    assert documented() == code
