"""One count of capacity on the lab: with a whole-card job, a shard job, an NPU job and a vNPU
job running, the dashboard, the nodes and clusters pages and the API report the same cards in
use, free and in all, and they match what Slurm's own TRES say.

The portal reads the real cluster through its own Slurm port; its node and queue reads are
shared for a minute here, so every page of a round sees one snapshot, and the round counts
only when Slurm's view did not change while it ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_migrate import upgrade

from aipool.lab.cluster import Lab
from aipool.lab.settings import portal_settings
from portal import create_app
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token, hash_password
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Node
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.slurm

PASSWORD = "integration password"
SLEEP = "#!/bin/bash\nsleep 300\n"
#: what each job asks for: a whole card, a quarter card in shards, a whole NPU, a quarter NPU
JOBS = {
    "whole": ["-p", "gpu", "--gres=gpu:a100:1"],
    "shards": ["-p", "gpu", "--gres=shard:8"],
    "npu": ["-p", "npu", "--gres=npu:910b:1"],
    "vnpu": ["-p", "npu", "--gres=npu:910b_vir05:1"],
}
SHARES = {"vir05": Fraction(1, 4), "vir10": Fraction(1, 2)}


@pytest.fixture
def app(lab: Lab, tmp_path: Path) -> Iterator[Flask]:
    app = create_app(
        {
            "SECRET_KEY": "integration",
            "DATABASE_URL": f"sqlite:///{tmp_path}/portal.db",
            **portal_settings(),
            "PORTAL_HOME": str(tmp_path / "home"),
            "SLURM_CACHE_SECONDS": 60.0,
        }
    )
    with app.app_context():
        upgrade()
        admin = User(username="pt-admin", password_hash=hash_password(PASSWORD))
        admin.is_platform_admin = True
        db.session.add(admin)
        db.session.commit()
        app.config["TEST_TOKEN"] = create_token(db.session, admin, "it", days=1)[1]
    yield app
    with app.app_context():
        db.engine.dispose()


def _browser(app: Flask) -> FlaskClient:
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" (?:type="hidden" )?value="([^"]+)"', page)
    assert token
    r = client.post(
        "/login", data={"username": "pt-admin", "password": PASSWORD, "csrf_token": token[1]}
    )
    assert r.status_code == 302
    return client


def _npu_cards(tres: Mapping[str, int]) -> Fraction:
    total = Fraction(0)
    for key, count in tres.items():
        if key.startswith("gres/npu:"):
            total += count * SHARES.get(key.rpartition("_")[2], Fraction(1))
    return total


def _slurm_says(nodes: list[Node]) -> dict[str, tuple[Fraction, Fraction, Fraction]]:
    """Cards in use, free and in all by kind, from each node's configured and allocated TRES
    (CfgTRES, AllocTRES): shards as their share of the node's cards, vNPUs as their
    template's share of a chip; free only on nodes that take new work."""
    out = {k: (Fraction(0), Fraction(0), Fraction(0)) for k in ("gpu", "npu")}
    for n in nodes:
        cards, shards = n.tres["gres/gpu"], n.tres["gres/shard"]
        per_card = Fraction(shards, cards) if cards and shards else Fraction(1)
        counts = {
            "gpu": (n.tres_used["gres/gpu"] + n.tres_used["gres/shard"] / per_card, cards),
            "npu": (_npu_cards(n.tres_used.counts), _npu_cards(n.tres.counts)),
        }
        for kind, (used, total) in counts.items():
            u, f, t = out[kind]
            out[kind] = (u + used, f + (total - used if n.available else 0), t + total)
    return out


def _pool_row(html: str, kind: str) -> tuple[float, float, float]:
    table = html.split('id="pool"', 1)[1].split("</table>", 1)[0]
    row = table.split(f'data-kind="{kind}"', 1)[1].split("</tr>", 1)[0]
    found = {k: float(v) for k, v in re.findall(r'data-(used|free|total)="([0-9.]+)"', row)}
    return found["used"], found["free"], found["total"]


def _clusters_cell(html: str, kind: str) -> tuple[float, float, float]:
    cell = html.split(f'<td data-kind="{kind}">', 1)[1].split("<", 1)[0]
    used, free, total = (float(Fraction(x.strip().replace(",", ""))) for x in cell.split("/"))
    return used, free, total


def _one_round(app: Flask, client: SlurmClient) -> dict[str, Any] | None:
    """Every page and endpoint once, and Slurm's nodes before and after; ``None`` when Slurm's
    allocations changed meanwhile (another job started or ended)."""
    api = app.test_client()
    api.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {app.config['TEST_TOKEN']}"
    browser = _browser(app)
    before = client.nodes()
    seen: dict[str, Any] = {
        "cluster": api.get("/api/v1/cluster").json,
        "clusters": api.get("/api/v1/clusters").json,
        "nodes": api.get("/api/v1/nodes?page_size=100").json,
        "dashboard": browser.get("/").get_data(as_text=True),
        "nodes_page": browser.get("/nodes").get_data(as_text=True),
        "clusters_page": browser.get("/clusters").get_data(as_text=True),
    }
    after = client.nodes()
    if [(n.name, n.tres_used) for n in before] != [(n.name, n.tres_used) for n in after]:
        return None
    return {**seen, "slurm": _slurm_says(after)}


def test_every_page_and_the_api_count_the_same_cards(
    app: Flask, client: SlurmClient, lab: Lab
) -> None:
    common = [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "--time=5"]
    ids = [client.submit(SLEEP, [*common, *opts]) for opts in JOBS.values()]
    wait_until(lambda: all(client.job(i).is_running for i in ids), 60, interval=0.5)
    rounds = (_one_round(app, client) for _ in range(10))
    seen = next((r for r in rounds if r is not None), None)
    assert seen is not None, "Slurm's allocations kept changing under the pages"
    pool = seen["cluster"]
    [mine] = [c for c in seen["clusters"] if c["name"] == lab.cfg.cluster]
    for kind, key in (("gpu", "gpus"), ("npu", "npus")):
        said = pool[key]["used"], pool[key]["free"], pool[key]["total"]
        assert said == pytest.approx([float(x) for x in seen["slurm"][kind]]), kind
        assert (mine[key]["used"], mine[key]["free"], mine[key]["total"]) == pytest.approx(said)
        per_node = [sum(n[key][w] for n in seen["nodes"]) for w in ("used", "free", "total")]
        assert per_node == pytest.approx(said), kind
        assert _pool_row(seen["dashboard"], kind) == pytest.approx(said), kind
        assert _pool_row(seen["nodes_page"], kind) == pytest.approx(said), kind
        assert _clusters_cell(seen["clusters_page"], kind) == pytest.approx(said), kind
    # our four jobs at least: a whole card and a quarter, a whole chip and a quarter
    assert pool["gpus"]["used"] >= 1.25
    assert pool["shards"]["used"] >= 8
    assert pool["npus"]["used"] >= 1.25
    assert pool["vnpus"]["used"] >= 1
    # 12 NPU cards, not Slurm's 16 NPU devices: npu2's 8 are 2 chips and 2 carved into vNPUs
    assert pool["npus"]["total"] == 12
