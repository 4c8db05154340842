"""The usage pages: periods (day, week, month, own), a chart over time, drilling down from a
domain to its projects, a project to its users and a user to their jobs, each checked on the
server (a member sees their own part; another tenant's reads as missing), in both languages;
the series and jobs API; reports downloaded in Chinese."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime

import pytest
from openpyxl import load_workbook

from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from portal.extensions import db
from tests.unit.accounting.builders import acct
from tests.unit.portal.conftest import Env

TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)
DAY = datetime(2026, 11, 2, 10, 30, tzinfo=UTC)
JOBS = [
    acct(11, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=2, user="alice", account="nlp"),
    acct(12, "cpu=1,gres/shard=16", hours=2, user="sam", account="nlp"),
    acct(13, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, user="bob", account="vision"),
    acct(14, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=3, user="carol", account="cs101"),
    acct(
        15,
        "cpu=1,gres/gpu=1,gres/gpu:a100=1",
        hours=4,
        user="alice",
        account="nlp",
        start=datetime(2026, 11, 20, 8, tzinfo=UTC),
    ),
]
ZH = {"Accept-Language": "zh-CN"}
MONTH = "window=month&day=2026-11-02"


@pytest.fixture
def usage(env: Env) -> Env:
    with env.app.app_context():
        ingest(db.engine, [u for j in JOBS if (u := meter(j, TOPO)) is not None])
    return env


def page(env: Env, who: str, url: str, **headers: str) -> tuple[int, str]:
    res = env.api(who).get(url, headers=headers)
    return res.status_code, res.get_data(as_text=True)


def rows(html: str) -> list[str]:
    """The first cell of each row of the usage table's body."""
    body = html.split('<table class="usage-table" tabindex="0">', 1)[1].split("</tbody>", 1)[0]
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r'<th scope="row">(.*?)</th>', body, re.S)
    ]


def test_the_drill_down_from_a_domain_to_a_users_jobs(usage: Env) -> None:
    status, html = page(usage, "admin", f"/usage?{MONTH}&by=domain")
    assert status == 200
    assert rows(html) == ["research", "teaching"]
    assert 'href="/usage/domains/research?window=month&amp;day=2026-11-02"' in html
    status, html = page(usage, "admin", f"/usage/domains/research?{MONTH}")
    assert status == 200
    assert rows(html) == ["nlp", "vision"]
    assert 'href="/usage/projects/nlp?' in html
    status, html = page(usage, "admin", f"/usage/projects/nlp?{MONTH}")
    assert rows(html) == ["alice", "sam"]
    assert 'href="/usage/projects/nlp/users/sam?' in html
    status, html = page(usage, "admin", f"/usage/projects/nlp/users/alice?{MONTH}")
    assert status == 200
    jobs = re.findall(r'<a href="/jobs/(\d+)">', html)
    assert jobs == ["15", "11"]  # newest first
    assert "Completed" in html  # the state in words
    assert 'aria-current="page">alice<' in html  # where one is, for screen readers too


@pytest.mark.parametrize(
    ("who", "url", "status"),
    [
        ("erin", "/usage/domains/research", 200),  # research's domain admin
        ("erin", "/usage/domains/teaching", 404),
        ("erin", "/usage/projects/cs101", 404),
        ("erin", "/usage/projects/nlp/users/sam", 200),
        ("tina", "/usage/projects/nlp", 404),  # teaching's admin: nlp is another tenant's
        ("alice", "/usage/projects/nlp", 200),  # a member
        ("alice", "/usage/projects/nlp/users/alice", 200),
        ("alice", "/usage/projects/nlp/users/sam", 403),  # no jobs.read_all on nlp
        ("alice", "/usage/projects/vision", 404),
        ("gina", "/usage/projects/nlp/users/sam", 200),  # a viewer through her group
        ("victor", "/usage/projects/vision/users/bob", 200),
        ("victor", "/usage/projects/nlp/users/alice", 404),
        ("nobody", "/usage/domains/research", 404),
        ("nobody", "/usage/projects/nlp", 404),
    ],
)
def test_each_level_is_checked_on_the_server(usage: Env, who: str, url: str, status: int) -> None:
    assert page(usage, who, f"{url}?{MONTH}")[0] == status


def test_a_member_sees_only_their_own_part_of_the_project(usage: Env) -> None:
    _, html = page(usage, "alice", f"/usage/projects/nlp?{MONTH}")
    assert rows(html) == ["alice"]
    assert "sam" not in html
    _, html = page(usage, "gina", f"/usage/projects/nlp?{MONTH}")  # may read every member's
    assert rows(html) == ["alice", "sam"]
    _, html = page(usage, "erin", f"/usage?{MONTH}&by=project")
    assert rows(html) == ["nlp", "vision"]  # research's projects only


def test_periods_day_week_month_and_own(usage: Env) -> None:
    _, html = page(usage, "admin", "/usage?window=day&day=2026-11-20")
    assert rows(html) == ["nlp"]  # only job 15 ran that day
    _, html = page(usage, "admin", "/usage?window=week&day=2026-11-04")  # Mon 2 to Sun 8
    assert rows(html) == ["nlp", "cs101", "vision"]  # most card-hours first
    assert "window=week&amp;day=2026-10-26" in html  # the week before
    assert "window=week&amp;day=2026-11-09" in html  # and after
    _, html = page(usage, "admin", "/usage?window=custom&first=2026-11-19&last=2026-11-21")
    assert rows(html) == ["nlp"]
    _, html = page(usage, "admin", "/usage?window=month&day=2026-10-15")
    assert "No usage in this period." in html
    assert "<svg" not in html.split('class="usage-chart"', 1)[1].split("</figure>", 1)[0]


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("window=custom&first=2026-11-05&last=2026-11-01", "last", "may not be before"),
        ("window=custom&first=2026-11-05", "last", "Give the first and the last day."),
        ("window=custom&first=2025-01-01&last=2026-11-01", "last", "At most 366 days"),
        ("window=year", "window", "Must be one of"),
        ("day=yesterday", "day", "Not a valid date."),
    ],
)
def test_a_bad_period_says_what_is_wrong(usage: Env, query: str, field: str, message: str) -> None:
    status, html = page(usage, "admin", f"/usage?{query}")
    assert status == 422
    assert message in html, html


def test_the_chart_draws_stacked_bars_per_day_with_their_numbers(usage: Env) -> None:
    _, html = page(usage, "admin", f"/usage/projects/nlp?{MONTH}")
    figure = html.split('class="usage-chart"', 1)[1].split("</figure>", 1)[0]
    assert 'role="img"' in figure
    titles = re.findall(r"<title>(.*?)</title>", figure)
    # 2 Nov: alice 4 card-hours (2 GPUs, 2 h), sam 1 (16 of 32 shards, 2 h); 20 Nov: alice 4
    assert titles == [
        "Nov 2, alice: 4.00 card-hours",
        "Nov 2, sam: 1.00 card-hours",
        "Nov 20, alice: 4.00 card-hours",
    ]
    assert '<span class="swatch series-1" aria-hidden="true"></span>sam' in figure
    assert '<th scope="row">Nov 2</th>' in figure  # the table behind the chart
    # where scripts run, the vendored uPlot redraws it from the numbers the figure carries
    assert "/static/vendor/uplot/uPlot.iife.min.js" in html
    carried = json.loads(figure.split('<script type="application/json">')[1].split("</script>")[0])
    assert carried["names"] == ["alice", "sam"]
    assert carried["step"] == "day"
    assert carried["values"][1][1] == 1.0  # sam, 2 Nov
    assert carried["t"][1] == int(datetime(2026, 11, 2, 12, tzinfo=UTC).timestamp())  # mid-day


def test_the_pages_speak_chinese(usage: Env) -> None:
    status, html = page(usage, "admin", f"/usage/projects/nlp?{MONTH}", **ZH)
    assert status == 200
    assert "<h1>项目 nlp 的用量</h1>" in html
    assert "按用户统计的卡时变化" in html
    assert "GPU 卡时" in html
    assert "11月2日，alice：4.00 卡时" in html
    assert "Usage of" not in html
    _, html = page(usage, "admin", f"/usage/projects/nlp/users/alice?{MONTH}", **ZH)
    assert "已完成" in html
    assert "开始时间" in html
    status, html = page(usage, "alice", f"/usage/projects/nlp/users/sam?{MONTH}", **ZH)
    assert status == 403
    assert "你只能查看自己的用量" in html


def test_the_series_and_jobs_api_keep_to_the_callers_scope(usage: Env) -> None:
    q = "from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z"
    res = usage.api("admin").get(f"/api/v1/usage/series?{q}&by=user&project=nlp")
    assert res.status_code == 200, res.json
    assert res.json["step"] == "day"
    assert res.json["keys"] == ["alice", "sam"]
    assert sum(float(v) for v in res.json["values"][0]) == 8.0
    mine = usage.api("alice").get(f"/api/v1/usage/series?{q}&by=user").json
    assert mine["keys"] == ["alice"]
    jobs = usage.api("alice").get(f"/api/v1/usage/jobs?{q}").json
    assert [j["job_id"] for j in jobs] == [15, 11]
    assert jobs[1]["gpu_card_hours"] == "4.0000"
    assert usage.api("alice").get(f"/api/v1/usage/jobs?{q}&user=sam").json == []
    half = "from=2026-11-01T00:30:00Z&to=2026-11-02T00:00:00Z"
    assert usage.api("admin").get(f"/api/v1/usage/series?{half}").status_code == 422


def test_reports_download_in_chinese(usage: Env) -> None:
    q = "month=2026-11&by=project"
    csv = usage.api("erin").get(f"/api/v1/usage/export?{q}&format=csv", headers=ZH)
    assert csv.status_code == 200
    assert csv.headers["Content-Type"] == "text/csv; charset=utf-8"
    lines = csv.data.decode("utf-8-sig").splitlines()
    assert lines[0].startswith("项目,作业,GPU 卡时,NPU 卡时,CPU 核时")
    assert lines[-1].startswith("合计,")
    xlsx = usage.api("admin").get(f"/api/v1/usage/export?{q}&format=xlsx", headers=ZH)
    wb = load_workbook(io.BytesIO(xlsx.data))
    assert wb.sheetnames == ["用量", "资源池利用率", "用户排行"]
    assert wb["用量"]["A1"].value == "AIPool"  # the site's name heads it
    drilled = usage.api("admin").get(
        "/api/v1/usage/export?month=2026-11&format=csv&by=user&project=nlp", headers=ZH
    )
    names = [ln.split(",")[0] for ln in drilled.data.decode("utf-8-sig").splitlines()[1:]]
    assert names == ["alice", "sam", "合计"]
