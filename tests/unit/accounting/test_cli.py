"""``aipool accounting``: reports, purge and the errors it gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook
from sqlalchemy import Engine, create_engine, func, select

from accounting.cli import accounting
from accounting.ingest import ingest
from accounting.meter import meter
from accounting.models import Rollup, UsageRecord
from tests.unit.accounting.builders import acct
from tests.unit.accounting.test_report import GOLDEN, TOPO, filled  # noqa: F401  (fixture)


def url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def test_report_csv_matches_the_golden_file(filled: Engine) -> None:  # noqa: F811
    res = CliRunner().invoke(
        accounting, ["report", "--db", url(filled), "--month", "2026-11", "--by", "project"]
    )
    assert res.exit_code == 0, res.output
    assert res.output == GOLDEN.read_text()


def test_report_files_and_filters(filled: Engine, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "r.xlsx"
    res = CliRunner().invoke(
        accounting,
        [
            "report",
            "--db",
            url(filled),
            "--from",
            "2026-11-01T00:00:00",
            "--to",
            "2026-12-01T00:00:00",
            "--by",
            "user",
            "--domain",
            "research",
            "--format",
            "xlsx",
            "-o",
            str(out),
            "--capacity",
            '{"gpu": [8, 0]}',
        ],
    )
    assert res.exit_code == 0, res.output
    rows = list(load_workbook(out)["Usage"].iter_rows(min_row=4, values_only=True))
    assert [r[0] for r in rows] == ["alice", "bob", "Total"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--month", "11/2026"], "YYYY-MM"),
        (["--from", "2026-11-01T00:00:00"], "both --from and --to"),
        (["--month", "2026-11", "--from", "2026-11-01T00:00:00"], "either --month"),
        (["--month", "2026-11", "--format", "pdf"], "needs --output"),
        (["--month", "2026-11", "--capacity", "[1]"], "--capacity"),
        (["--from", "yesterday", "--to", "2026-11-01T00:00:00"], "ISO"),
    ],
)
def test_bad_report_arguments(filled: Engine, args: list[str], message: str) -> None:  # noqa: F811
    res = CliRunner().invoke(accounting, ["report", "--db", url(filled), *args])
    assert res.exit_code == 2
    assert message in res.output


def test_a_database_without_the_tables_is_refused(tmp_path: Path) -> None:
    empty = create_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    res = CliRunner().invoke(accounting, ["report", "--db", url(empty), "--month", "2026-11"])
    assert res.exit_code == 1
    assert "no accounting tables" in res.output
    res = CliRunner().invoke(accounting, ["report", "--db", "nonsense", "--month", "2026-11"])
    assert res.exit_code == 2
    assert "database URL not understood" in res.output
    missing = f"sqlite:///{tmp_path / 'no' / 'such.db'}"
    res = CliRunner().invoke(accounting, ["report", "--db", missing, "--month", "2026-11"])
    assert res.exit_code == 1
    assert "cannot open the database" in res.output
    res = CliRunner().invoke(
        accounting, ["report", "--month", "2026-11"], env={"AIPOOL_DATABASE_URL": None}
    )
    assert res.exit_code == 2
    assert "AIPOOL_DATABASE_URL" in res.output


def test_purge_keeps_rollups_and_recent_rows(engine: Engine) -> None:
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    old = acct(1, "cpu=1", start=now - timedelta(days=200))
    new = acct(2, "cpu=1", start=now - timedelta(days=2))
    ingest(engine, [u for j in (old, new) if (u := meter(j, TOPO)) is not None])
    with engine.connect() as c:
        before = c.execute(select(func.sum(Rollup.cpu_s)).where(Rollup.period == "month")).scalar()
    res = CliRunner().invoke(accounting, ["purge", "--db", url(engine)])
    assert res.exit_code == 0, res.output
    assert "purged 1 job rows, 0 hourly rollups" in res.output
    with engine.connect() as c:
        assert [r.job_id for r in c.execute(select(UsageRecord.job_id))] == [2]
        after = c.execute(select(func.sum(Rollup.cpu_s)).where(Rollup.period == "month")).scalar()
    assert after == before
    bad = CliRunner().invoke(
        accounting, ["purge", "--db", url(engine), "--keep-days", "30", "--keep-hourly-days", "10"]
    )
    assert bad.exit_code == 2
    assert "at least as long" in bad.output
