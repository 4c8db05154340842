"""The dashboard, nodes, clusters and charts pages in both languages, for a member, a project
manager and the platform admin: the same capacity on every page and in the API (one
computation), node states in words, the charts' data from the sampler's rows only."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from portal.control.daemon import Daemon
from portal.extensions import db
from portal.nodes.models import CapacitySample
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login

ZH = {"Accept-Language": "zh-CN"}
CJK = re.compile(r"[\u4e00-\u9fff]")
USERS = ("alice", "carol", "admin")


def pool_row(html: str, kind: str) -> tuple[float, float, float]:
    """(used, free, total) of the pool table's row of ``kind`` (the data attributes)."""
    table = html.split('id="pool"', 1)[1].split("</table>", 1)[0]
    row = table.split(f'data-kind="{kind}"', 1)[1].split("</tr>", 1)[0]

    def value(name: str) -> float:
        m = re.search(rf'data-{name}="([0-9.]+)"', row)
        assert m, (kind, name, row)
        return float(m.group(1))

    return value("used"), value("free"), value("total")


@pytest.mark.parametrize("who", USERS)
def test_dashboard_and_nodes_show_the_apis_totals_in_both_languages(env: Env, who: str) -> None:
    client = login(env, who)
    api = env.api(who).get("/api/v1/cluster").json
    for path in ("/", "/nodes"):
        en = client.get(path).get_data(as_text=True)
        zh = client.get(path, headers=ZH).get_data(as_text=True)
        assert '<html lang="zh-CN">' in zh
        for kind, key in (("gpu", "gpus"), ("npu", "npus")):
            want = (api[key]["used"], api[key]["free"], api[key]["total"])
            assert pool_row(en, kind) == pytest.approx(want), (path, kind)
            assert pool_row(zh, kind) == pytest.approx(want), (path, kind)
        assert "GPU 卡 a100" in zh
        assert "GPU 分片（每个为 1/32 张卡）" in zh
        assert "GPU shards (each 1/32 of a card)" in en
    nodes = client.get("/nodes", headers=ZH).get_data(as_text=True)
    assert "部分占用" in nodes  # MIXED in words
    assert '<code class="code">MIXED</code>' in nodes


def test_the_api_adds_up_per_node_partition_and_pool(env: Env) -> None:
    total = env.api("bob").get("/api/v1/cluster").json
    nodes = env.api("bob").get("/api/v1/nodes?page_size=100").json
    assert total["nodes"] == len(nodes) == 4
    for key in ("gpus", "shards", "npus", "vnpus", "cpus", "memory_mb"):
        for what in ("total", "used", "free"):
            assert total[key][what] == pytest.approx(sum(n[key][what] for n in nodes)), key
            assert total[key][what] == pytest.approx(
                sum(p[key][what] for p in total["partitions"])
            ), key
    # the recorded nodes: 2 whole cards + 40 shards in use of 8 cards
    assert (total["gpus"]["used"], total["gpus"]["whole_free"]) == (3.25, 4)
    assert total["models"][0]["slices"][0]["share"] == "1/32"


@pytest.mark.parametrize("who", ["admin", "erin"])
def test_the_clusters_page_in_chinese(env: Env, who: str) -> None:
    zh = login(env, who).get("/clusters", headers=ZH).get_data(as_text=True)
    assert "集群" in zh
    assert "正常响应" in zh
    assert "3.25 / 4.75 / 8" in zh
    assert "（4 张整卡空闲）" in zh
    assert "空闲 1、部分占用 3" in zh


def _sample(env: Env, at: datetime) -> None:
    env.app.config["CLOCK"] = lambda: at
    try:
        Daemon(env.app).sample_pass()
    finally:
        env.app.config["CLOCK"] = None


@pytest.mark.parametrize("who", USERS)
def test_the_charts_page_and_its_data(env: Env, who: str) -> None:
    client = login(env, who)
    empty = client.get("/nodes/charts", headers=ZH).get_data(as_text=True)
    assert "该时间范围内暂无采样" in empty
    now = datetime.now(UTC)
    for minutes in (3, 2, 1):
        _sample(env, now - timedelta(minutes=minutes))
    zh = client.get("/nodes/charts?window=1h", headers=ZH).get_data(as_text=True)
    assert 'src="/static/vendor/uplot/uPlot.iife.min.js"' in zh
    assert 'data-series-url="/api/v1/monitoring/series?window=1h"' in zh
    assert '<b aria-current="page">1 小时</b>' in zh
    assert "资源池利用率" in zh
    assert "40.6%" in zh  # 3.25 of 8 cards, the mean and the highest of the window
    en = client.get("/nodes/charts?window=bogus").get_data(as_text=True)
    assert '<b aria-current="page">6 hours</b>' in en  # an unknown window is the default one
    data = env.api(who).get("/api/v1/monitoring/series?window=1h").json
    assert [v for v in data["utilisation"]["gpu"] if v is not None] == [40.62] * 3
    assert set(data["nodes"]) == {"gpu1", "gpu2", "npu1"}
    assert env.api(who).get("/api/v1/monitoring/series?window=2h").status_code == 422


def test_a_page_never_samples(env: Env) -> None:
    client = login(env, "admin")
    for path in ("/", "/nodes", "/nodes/charts", "/clusters"):
        assert client.get(path).status_code == 200
    assert env.api("admin").get("/api/v1/monitoring/series").status_code == 200
    with env.app.app_context():
        assert db.session.query(CapacitySample).count() == 0
