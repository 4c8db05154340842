"""The shipped Prometheus rules and Grafana dashboards use only names the code exports, and
docs/operations.md lists exactly those: a renamed metric breaks this test."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics_core import Metric
from sqlalchemy import create_engine

from accounting.metrics import AccountingMetrics
from accounting.models import TABLES, Base
from portal.metrics import Access, PortalMetrics
from slurm_plugins.health.checker import CheckReport
from slurm_plugins.health.metrics import HealthMetrics
from slurm_plugins.health.plan import HealthState, plan
from slurm_plugins.node.metrics import CardView, NodeMetrics
from slurm_plugins.policy.metrics import PolicyMetrics
from tests.unit.health.builders import CONFIG, NOW, seen, view
from tests.unit.metrics.test_node_host import HEALTH, HOST
from tests.unit.metrics.test_node_metrics import DEVICES
from tests.unit.metrics.test_pool import _view
from tests.unit.prometheus.promtool import check

TOP = Path(__file__).resolve().parents[3]
RULES = TOP / "ops" / "prometheus" / "aipool.rules.yml"
SCRAPE = TOP / "ops" / "prometheus" / "prometheus.yml"
DASHBOARDS = sorted((TOP / "ops" / "grafana").glob("*.json"))
DOCS = TOP / "docs" / "operations.md"
#: a PromQL identifier: a metric name, a recorded name (with colons), a label or a function
IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
#: series a histogram or counter family exposes besides its own name
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def exported() -> list[Metric]:
    """Every family the code exports: the pool's, the policy daemon's, the node agent's, the
    health checker's, accounting's and the portal's, each from its own collector."""
    from slurm_plugins.policy.poolmetrics import pool_families

    node = NodeMetrics()
    node.saw(CardView("lab", "n1", DEVICES, HEALTH, HOST))
    accounting = create_engine("sqlite://")  # the families' names, not their figures
    Base.metadata.create_all(accounting, tables=TABLES)
    families = [*pool_families(_view()), *node.registry.collect()]
    families += PolicyMetrics().registry.collect()
    health = HealthMetrics()
    health.checked(
        CheckReport(plan([view()], {"gpu1": seen()}, HealthState(), now=NOW, config=CONFIG)), 0.1
    )
    families += health.registry.collect()
    families += AccountingMetrics(accounting).registry.collect()
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
        "AIPoolCardErrors",
        "AIPoolHealthChecksFailing",
        "AIPoolAccountingImportLag",
        "AIPoolNodeFilesystemFull",
    } <= set(alerts)
    for rule in alerts.values():
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]


def expressions(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of a dashboard: each panel's targets and each query variable."""
    out = [(p["title"], t["expr"]) for p in dash["panels"] for t in p["targets"]]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            out.append((f"${v['name']}", v["query"]["query"]))
    return out


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
def test_the_dashboards_are_grafana_json_over_our_names(path: Path) -> None:
    dash = json.loads(path.read_text())
    assert isinstance(dash["schemaVersion"], int)
    assert dash["uid"]
    assert dash["title"]
    assert dash["panels"]
    known = series_names()
    recorded = {r["record"] for r in rules() if "record" in r}
    for panel in dash["panels"]:
        assert panel["title"], panel
        assert panel["targets"], panel
    for where, expr in expressions(dash):
        metrics, records = names_in(expr)
        assert metrics <= known, (where, metrics - known)
        assert records <= recorded, (where, records - recorded)
        assert metrics or records, where


def test_the_dashboards_one_for_each_view() -> None:
    uids = {json.loads(p.read_text())["uid"] for p in DASHBOARDS}
    assert uids == {"aipool-pool-overview", "aipool-node", "aipool-tenant", "aipool-scheduler"}


def test_the_dashboards_queries_are_promql(tmp_path: Path) -> None:
    """Each query parses (promtool, as a recording rule; ``$var`` stands for a value and
    ``label_values(m, l)`` for its metric ``m``)."""
    exprs = [e for p in DASHBOARDS for _, e in expressions(json.loads(p.read_text()))]
    plain = [
        re.sub(r"^label_values\((.*), *[a-z_]+\)$", r"\1", re.sub(r"\$\w+", "x", e)) for e in exprs
    ]
    records = [{"record": f"x:q{i}:y", "expr": e} for i, e in enumerate(plain)]
    group = {"name": "dashboards", "rules": records}
    path = tmp_path / "dashboards.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [group]}))
    assert f"SUCCESS: {len(plain)} rules found" in check("rules", str(path))


def test_every_family_is_watched() -> None:
    """Each family the code exports is on a dashboard or in a rule (or a rule over one)."""
    used: set[str] = set()
    for rule in rules():
        used |= names_in(rule["expr"])[0]
    for path in DASHBOARDS:
        for _, expr in expressions(json.loads(path.read_text())):
            used |= names_in(expr)[0]
    unwatched = [
        f.name
        for f in exported()
        if not any(f.name + s in used for s in ("", *SUFFIXES.get(f.type, ())))
    ]
    assert unwatched == []


def test_the_scrape_example_loads_the_rules() -> None:
    doc = yaml.safe_load(SCRAPE.read_text())
    assert any(f.endswith(RULES.name) for f in doc["rule_files"])
    jobs = {j["job_name"] for j in doc["scrape_configs"]}
    assert {"aipool-policy", "aipool-health", "aipool-accounting", "aipool-node"} <= jobs
    assert "aipool-portal" in jobs


def test_the_docs_list_exactly_what_the_code_exports() -> None:
    code = {f.name + ("_total" if f.type == "counter" else "") for f in exported()}
    assert documented() == code
