"""Accounting's metrics: import lag and this month's card use from the database at scrape
time, imports counted by the scheduler; ``--metrics`` is opt-in and checked."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, insert

from accounting.alert_cli import run
from accounting.ingest import IngestResult, ingest
from accounting.metrics import AccountingMetrics
from accounting.models import IngestState
from tests.unit.accounting.builders import T0, acct, d
from tests.unit.accounting.conftest import engine, migrated_db  # noqa: F401 (fixtures)
from tests.unit.accounting.test_ingest import usages
from tests.unit.metrics.scheme import check_scheme, values

NOW = T0 + timedelta(hours=6)


def test_month_card_seconds_per_tenant(engine: Engine) -> None:  # noqa: F811
    ingest(
        engine,
        usages(
            acct(1, "cpu=2,gres/gpu=2,gres/gpu:a100=2", hours=2),  # 4 card-hours
            acct(2, "cpu=1,gres/shard=8", hours=2),  # a quarter card for 2 h
            acct(3, "cpu=4,gres/npu=1,gres/npu:910b=1", hours=1.5, nodes="npu1", account="cv"),
            acct(4, "cpu=1,gres/gpu=1,gres/gpu:a100=1", start=d(2026, 10, 5)),  # last month
            acct(5, "cpu=8", account="cpu-only"),  # no cards: no series
        ),
    )
    fam = check_scheme(AccountingMetrics(engine, "lab", clock=lambda: NOW).registry.collect())
    assert values(fam["aipool_accounting_month_card_seconds"], cluster="aipool") == {
        ("gpu", "a100", "nlp"): (4 + 0.5) * 3600,
        ("npu", "910b", "cv"): 1.5 * 3600,
    }


def test_import_lag_and_imports(engine: Engine) -> None:  # noqa: F811
    metrics = AccountingMetrics(engine, "lab", clock=lambda: NOW)
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_accounting_import_lag_seconds"]) == {}  # never imported
    with engine.begin() as conn:
        conn.execute(
            insert(IngestState),
            [
                {"cluster": "", "imported_until": NOW - timedelta(minutes=15), "updated_at": NOW},
                {"cluster": "hpc2", "imported_until": NOW - timedelta(hours=2), "updated_at": NOW},
            ],
        )
    metrics.measure(lambda: IngestResult(seen=12, written=5, unchanged=7, batches=1))

    def broken() -> IngestResult:
        raise RuntimeError("slurmdbd down")

    with pytest.raises(RuntimeError):
        metrics.measure(broken)
    fam = check_scheme(metrics.registry.collect())
    # the default cluster ("" in the table) takes the configured label
    assert values(fam["aipool_accounting_import_lag_seconds"]) == {
        ("lab",): 900.0,
        ("hpc2",): 7200.0,
    }
    assert values(fam["aipool_accounting_imported_rows"]) == {("written",): 5, ("unchanged",): 7}
    assert values(fam["aipool_accounting_imports"]) == {("ok",): 1, ("failed",): 1}


def test_the_option_is_checked() -> None:
    bad = CliRunner().invoke(run, ["--metrics", "acct.example:9104"])
    assert bad.exit_code == 2
    assert "not an IP address: 'acct.example'" in bad.output
