"""The portal's usage API and page: tenants see only their own usage; exports; validation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.orm import Session

from accounting.energy import Point, Series, import_energy
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from portal.extensions import db
from tests.unit.accounting.builders import acct
from tests.unit.portal.conftest import Env

TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)
JOBS = [
    acct(1, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=2, user="alice", account="nlp"),
    acct(2, "cpu=1,gres/shard=16", hours=2, user="sam", account="nlp"),
    acct(3, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, user="bob", account="vision"),
    acct(4, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=3, user="carol", account="cs101"),
]


@pytest.fixture
def usage(env: Env) -> Env:
    with env.app.app_context():
        ingest(db.engine, [u for j in JOBS if (u := meter(j, TOPO)) is not None])
    return env


def keys(env: Env, who: str, by: str = "project") -> dict[str, str]:
    res = env.api(who).get(f"/api/v1/usage?month=2026-11&by={by}")
    assert res.status_code == 200, res.json
    return {ln["key"]: ln["gpu_card_hours"] for ln in res.json["lines"]}


def test_each_caller_sees_only_their_tenants(usage: Env) -> None:
    assert keys(usage, "admin") == {
        "cs101": "3.0000",
        "nlp": "5.0000",
        "vision": "1.0000",
    }
    assert keys(usage, "erin") == {"nlp": "5.0000", "vision": "1.0000"}  # research admin
    assert keys(usage, "tina") == {"cs101": "3.0000"}  # teaching admin
    assert keys(usage, "victor") == {"vision": "1.0000"}  # viewer: jobs.read_all on vision
    assert keys(usage, "alice", by="user") == {"alice": "4.0000"}  # a member: her own only
    assert keys(usage, "nobody") == {}


def test_totals_and_top_users(usage: Env) -> None:
    res = usage.api("admin").get("/api/v1/usage?month=2026-11&by=domain")
    assert res.json["total"]["gpu_card_hours"] == "9.0000"
    assert [u["key"] for u in res.json["top_users"]] == ["alice", "carol", "sam", "bob"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("month=2026-13", "month"),
        ("by=colour", "by"),
        ("from=2026-11-01T00:00:00Z", "to"),
        ("month=2026-11&from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z", "month"),
        ("from=2026-11-01T00:30:00Z&to=2026-11-02T00:00:00Z", "from"),
    ],
)
def test_bad_queries_say_what_is_wrong(usage: Env, query: str, field: str) -> None:
    res = usage.api("admin").get(f"/api/v1/usage?{query}")
    assert res.status_code == 422
    errors = res.json["errors"]
    assert field in {**errors.get("query", {}), **errors.get("json", {})}, errors


def test_exports(usage: Env) -> None:
    csv = usage.api("erin").get("/api/v1/usage/export?month=2026-11&by=project&format=csv")
    assert csv.status_code == 200
    assert csv.mimetype == "text/csv"
    assert csv.data.startswith(b"\xef\xbb\xbf")  # UTF-8 with a byte order mark, for Excel
    assert csv.data.decode("utf-8-sig").splitlines()[1:] == [
        "nlp,2,5.0000,0.0000,4.0000,0.0000,1.0000",
        "vision,1,1.0000,0.0000,1.0000,0.0000,1.0000",
        "Total,3,6.0000,0.0000,5.0000,0.0000,1.0000",
    ]
    pdf = usage.api("admin").get("/api/v1/usage/export?month=2026-11&format=pdf")
    assert pdf.mimetype == "application/pdf"
    assert pdf.data.startswith(b"%PDF")
    bad = usage.api("admin").get("/api/v1/usage/export?month=2026-11&format=docx")
    assert bad.status_code == 422


def test_usage_page(usage: Env) -> None:
    page = usage.api("tina").get("/usage?month=2026-11")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "cs101" in html
    assert "nlp" not in html
    assert datetime(2026, 11, 1, tzinfo=UTC).strftime("%Y-%m-%d") in html


def test_energy_beside_card_hours_within_the_callers_scope(usage: Env) -> None:
    t0 = JOBS[0].start_time.timestamp()  # type: ignore[union-attr]
    series = [
        Series(job, "gpu1", (Point(t0, watts), Point(t0 + 60, watts)))
        for job, watts in ((1, 600.0), (3, 300.0), (4, 120.0))
    ]
    with usage.app.app_context(), Session(db.engine) as s:
        import_energy(s, "aipool", series)
        s.commit()

    def kwh(who: str) -> dict[str, str]:
        res = usage.api(who).get("/api/v1/usage?month=2026-11&by=project")
        return {ln["key"]: ln["kwh"] for ln in res.json["lines"]} | {"": res.json["total"]["kwh"]}

    assert kwh("admin") == {
        "nlp": "0.010000",
        "vision": "0.005000",
        "cs101": "0.002000",
        "": "0.017000",
    }
    assert kwh("erin") == {
        "nlp": "0.010000",
        "vision": "0.005000",
        "": "0.015000",
    }  # research admin
    assert kwh("alice") == {"nlp": "0.010000", "": "0.010000"}  # her own job
