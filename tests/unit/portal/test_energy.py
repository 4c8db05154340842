"""Energy saved by elastic nodes, in the API and on the nodes page in both languages: hours
powered down from the power programs' event log times each node's idle watts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from slurm_plugins.power.plan import Event, EventKind
from slurm_plugins.power.program import append_events
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login

ZH = {"Accept-Language": "zh-CN"}


@pytest.fixture
def power(env: Env, tmp_path: Path) -> Iterator[Path]:
    """A site with elastic nodes: egpu1 (500 W) off for 2 h of the last day, enpu1 (the
    site's 200 W) off for the last hour and still off."""
    events = tmp_path / "events.jsonl"
    config = tmp_path / "power.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "nodes": "egpu1,enpu1",
                "driver": {"kind": "command", "resume": ["on"], "suspend": ["off"]},
                "idle_watts": 200,
                "node_watts": {"egpu1": 500},
                "events": str(events),
            }
        )
    )
    now = time.time()
    append_events(
        events,
        [
            Event(now - 5 * 3600, "egpu1", EventKind.SUSPEND),
            Event(now - 3 * 3600, "egpu1", EventKind.RESUME),
            Event(now - 3600, "enpu1", EventKind.SUSPEND),
        ],
    )
    env.app.config["POWER_CONFIG"] = str(config)
    yield config
    env.app.config["POWER_CONFIG"] = None


def test_api_reports_hours_off_and_kwh_per_node(env: Env, power: Path) -> None:
    data = env.api("bob").get("/api/v1/nodes/energy?window=1d").json
    assert data["configured"] is True
    by = {n["node"]: n for n in data["nodes"]}
    assert by["egpu1"]["hours_off"] == pytest.approx(2.0, abs=0.01)
    assert by["egpu1"]["kwh"] == pytest.approx(1.0, abs=0.01)
    assert by["enpu1"]["watts"] == 200
    assert by["enpu1"]["kwh"] == pytest.approx(0.2, abs=0.01)
    assert data["kwh"] == pytest.approx(1.2, abs=0.02)


def test_api_refuses_an_unknown_window_and_says_when_nothing_is_configured(env: Env) -> None:
    bad = env.api("bob").get("/api/v1/nodes/energy?window=2y")
    assert bad.status_code == 422
    none = env.api("bob").get("/api/v1/nodes/energy").json
    assert none["configured"] is False
    assert none["nodes"] == []


def test_nodes_page_shows_the_energy_in_both_languages(env: Env, power: Path) -> None:
    client = login(env, "alice")
    en = client.get("/nodes").get_data(as_text=True)
    zh = client.get("/nodes", headers=ZH).get_data(as_text=True)
    assert "Energy saved by powering idle nodes down" in en
    assert 'data-node="egpu1"' in en
    assert "1.000" in en.split('data-node="egpu1"', 1)[1].split("</tr>", 1)[0]
    assert '<html lang="zh-CN">' in zh
    assert 'data-node="enpu1"' in zh  # the section's words come from the catalogue


def test_nodes_page_without_elastic_nodes(env: Env) -> None:
    en = login(env, "alice").get("/nodes").get_data(as_text=True)
    assert "This pool has no elastic nodes" in en
