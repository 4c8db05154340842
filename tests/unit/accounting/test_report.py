"""Reports: periods covered exactly by rollups, golden CSV, XLSX, a PDF whose charts render."""

from __future__ import annotations

import io
import shutil
import subprocess
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image
from openpyxl import load_workbook
from sqlalchemy import Engine

from accounting import export
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.report import Dim, ReportError, build, cover, parse_month
from tests.unit.accounting.builders import d, month_jobs

GOLDEN = Path(__file__).parents[2] / "data" / "accounting" / "report_by_project.csv"
TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)
NOV = parse_month("2026-11")
POOLS = {"gpu": (8, 0), "npu": (0, 8)}


@pytest.fixture
def filled(engine: Engine) -> Engine:
    jobs = month_jobs()
    ingest(engine, [u for j in jobs if (u := meter(j, TOPO)) is not None])
    return engine


def test_cover_uses_the_coarsest_rollups() -> None:
    assert cover(*NOV) == [("month", d(2026, 11, 1), d(2026, 12, 1))]
    assert cover(d(2026, 10, 30, 22), d(2026, 12, 2, 3)) == [
        ("hour", d(2026, 10, 30, 22), d(2026, 10, 31)),
        ("day", d(2026, 10, 31), d(2026, 11, 1)),
        ("month", d(2026, 11, 1), d(2026, 12, 1)),
        ("day", d(2026, 12, 1), d(2026, 12, 2)),
        ("hour", d(2026, 12, 2), d(2026, 12, 2, 3)),
    ]
    assert cover(d(2026, 11, 3, 5), d(2026, 11, 3, 9)) == [
        ("hour", d(2026, 11, 3, 5), d(2026, 11, 3, 9))
    ]


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (d(2026, 11, 2), d(2026, 11, 1), "not after"),
        (d(2026, 11, 1, 0), datetime(2026, 11, 2, 0, 30, tzinfo=UTC), "whole hour"),
        (datetime(2026, 11, 1), datetime(2026, 11, 2), "time zone"),
        (d(2026, 11, 1), datetime(9999, 12, 31, 23, tzinfo=UTC), "out of range"),
    ],
)
def test_bad_periods_say_what_is_wrong(start: datetime, end: datetime, message: str) -> None:
    with pytest.raises(ReportError, match=message):
        cover(start, end)
    with pytest.raises(ReportError, match="YYYY-MM"):
        parse_month("Nov 2026")
    with pytest.raises(ReportError, match="out of range"):
        parse_month("9999-12")


def test_any_period_sums_the_same_as_its_parts(filled: Engine) -> None:
    with filled.connect() as c:
        month = build(c, *NOV, Dim.USER)
        halves = [
            build(c, d(2026, 11, 1), d(2026, 11, 2, 11), Dim.USER),
            build(c, d(2026, 11, 2, 11), d(2026, 12, 1), Dim.USER),
        ]
    assert month.total.gpu_card_hours == sum(h.total.gpu_card_hours for h in halves)
    # carol's job runs 2 h into December: only 2 of its 4 hours are November's
    carol = next(ln for ln in month.lines if ln.key == "carol")
    assert carol.gpu_card_hours == Decimal("1.0000")


def test_report_by_project_matches_the_golden_csv(filled: Engine) -> None:
    with filled.connect() as c:
        report = build(c, *NOV, Dim.PROJECT, pools=POOLS)
    assert export.to_csv(report) == GOLDEN.read_text()
    gpu = next(u for u in report.utilisation if u.pool == "gpu")
    # 4 + 0.5 + 1 card-hours of 8 cards x 720 h
    assert gpu.ratio == (Decimal("5.5") / (8 * 720)).quantize(Decimal("0.0001"))
    assert [u.key for u in report.top_users] == ["alice", "bob", "carol", "dave"]


def test_filters_restrict_a_report(filled: Engine) -> None:
    with filled.connect() as c:
        report = build(c, *NOV, Dim.USER, where={Dim.DOMAIN: ["research"]})
    assert {ln.key for ln in report.lines} == {"alice", "bob"}


def test_xlsx_holds_the_same_numbers(filled: Engine) -> None:
    with filled.connect() as c:
        report = build(c, *NOV, Dim.DOMAIN, pools=POOLS)
    wb = load_workbook(io.BytesIO(export.to_xlsx(report)))
    rows = list(wb["Usage"].iter_rows(values_only=True))
    assert rows[0][0] == "AIPool"
    assert rows[2] == (
        "Domain",
        "Jobs",
        "GPU card-hours",
        "NPU card-hours",
        "CPU core-hours",
        "Memory GiB-hours",
        "Average wait (minutes)",
    )
    research = next(r for r in rows if r[0] == "research")
    assert Decimal(str(research[2])) == Decimal("4.5")
    assert rows[-1][0] == "Total"
    assert [r[0] for r in wb["Pool utilisation"].iter_rows(min_row=2, values_only=True)] == [
        "gpu",
        "npu",
    ]
    assert wb.sheetnames == ["Usage", "Pool utilisation", "Top users"]


def test_pdf_opens_and_its_charts_render(filled: Engine, tmp_path: Path) -> None:
    pdftoppm = shutil.which("pdftoppm")
    assert pdftoppm, "pdftoppm (poppler-utils) is needed: scripts/bootstrap.sh installs it"
    with filled.connect() as c:
        report = build(c, *NOV, Dim.PROJECT, pools=POOLS)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(export.render(report, "pdf"))
    subprocess.run(
        [pdftoppm, "-png", "-r", "40", str(pdf), str(tmp_path / "page")], check=True, timeout=60
    )
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) == 2
    first, second = (image.imread(p)[..., :3] for p in pages)
    # the bar colours of the charts are on the pages: C0 blue, tab:green, tab:purple
    assert _has_colour(first, (0x1F, 0x77, 0xB4))
    assert _has_colour(second, (0x2C, 0xA0, 0x2C))
    assert _has_colour(second, (0x94, 0x67, 0xBD))


def _has_colour(img: np.ndarray, rgb: tuple[int, int, int]) -> bool:
    want = np.array(rgb) / 255
    return int((np.abs(img - want).max(axis=-1) < 0.06).sum()) > 20


def test_unknown_format_is_refused(filled: Engine) -> None:
    with filled.connect() as c:
        report = build(c, *NOV, Dim.PROJECT)
    with pytest.raises(ValueError, match="not one of csv, xlsx, pdf"):
        export.render(report, "docx")
