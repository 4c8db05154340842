"""Accounting's migrations, ingestion, reports and billing on PostgreSQL (a server this test
starts, :mod:`tests.unit.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import Engine, create_engine, inspect
from sqlalchemy.orm import Session

from accounting import export, migrate
from accounting.billing import post_bill, top_up
from accounting.billing_models import BillingAccount, Price, PricePlan
from accounting.db import Base
from accounting.ingest import ingest
from accounting.meter import meter
from accounting.report import Dim, build, parse_month
from tests.unit.accounting.builders import d, month_jobs
from tests.unit.accounting.test_report import GOLDEN, POOLS, TOPO
from tests.unit.postgres import pg_url  # noqa: F401  (fixture)


@pytest.fixture
def pg(pg_url: str) -> Iterator[Engine]:  # noqa: F811
    """Accounting's tables from its own migrations, and gone again after the test."""
    engine = create_engine(pg_url)
    migrate.upgrade(engine)
    yield engine
    migrate.downgrade(engine, "base")
    engine.dispose()


def test_migrations_match_the_models_on_postgres(pg: Engine) -> None:
    assert migrate.state(pg).up_to_date
    assert migrate.drift(pg) == []
    migrate.downgrade(pg, "base")
    assert set(inspect(pg).get_table_names()) <= {migrate.VERSION_TABLE}
    migrate.upgrade(pg)
    assert set(Base.metadata.tables) <= set(inspect(pg).get_table_names())


def test_ingest_report_and_bill_on_postgres(pg: Engine) -> None:
    jobs = month_jobs()
    usages = [u for j in jobs if (u := meter(j, TOPO)) is not None]
    assert ingest(pg, usages).written == 5
    assert ingest(pg, usages).written == 0
    with pg.connect() as conn:
        report = build(conn, *parse_month("2026-11"), Dim.PROJECT, pools=POOLS)
    assert export.to_csv(report) == GOLDEN.read_text()

    with Session(pg) as s:
        plan = PricePlan(name="std", currency="CNY", storage_price=Decimal(0))
        s.add(plan)
        s.flush()
        s.add(Price(plan_id=plan.id, resource="gpu", model="a100", rate=Decimal("3.25")))
        s.add(BillingAccount(tenant="nlp", plan_id=plan.id))
        s.commit()
        top_up(s, "nlp", Decimal("20.00"), actor="admin")
        bill = post_bill(s, "nlp", datetime(2026, 11, 1, tzinfo=UTC), now=d(2026, 12, 2))
        assert bill.total == Decimal("14.62")  # 4.5 card-hours x 3.25 = 14.625, half-even
        acct_row = s.get(BillingAccount, bill.account_id)
        assert acct_row is not None
        assert acct_row.balance == Decimal("5.38")
