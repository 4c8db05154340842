"""A report as CSV, XLSX (openpyxl) or PDF with charts (matplotlib)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from accounting.report import Line, Report

COLUMNS = (
    "jobs",
    "gpu_card_hours",
    "npu_card_hours",
    "cpu_hours",
    "mem_gib_hours",
    "avg_wait_min",
)
FORMATS = ("csv", "xlsx", "pdf")


def _cells(line: Line) -> list[Any]:
    return [line.key, *(getattr(line, c) for c in COLUMNS)]


def _title(report: Report) -> str:
    fmt = "%Y-%m-%d %H:%M"
    return (
        f"Usage by {report.by.value}, {report.start.strftime(fmt)} to "
        f"{report.end.strftime(fmt)} UTC"
    )


def to_csv(report: Report) -> str:
    """One line per group and a ``total`` line; amounts as exact decimals."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([report.by.value, *COLUMNS])
    for line in (*report.lines, report.total):
        w.writerow(_cells(line))
    return out.getvalue()


def to_xlsx(report: Report) -> bytes:
    """Sheets ``usage``, ``utilisation`` and ``top users``."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    ws = wb.worksheets[0]  # a new workbook has one sheet
    ws.title = "usage"
    ws.append([_title(report)])
    ws.append([report.by.value, *COLUMNS])
    for line in report.lines:
        ws.append(_cells(line))
    ws.append(_cells(report.total))
    for cell in (*ws[1], *ws[2], *ws[ws.max_row]):
        cell.font = Font(bold=True)
    util = wb.create_sheet("utilisation")
    util.append(["pool", "gpu_cards", "npu_cards", "gpu_card_hours", "npu_card_hours", "ratio"])
    for u in report.utilisation:
        util.append([u.pool, u.gpu_cards, u.npu_cards, u.gpu_card_hours, u.npu_card_hours, u.ratio])
    top = wb.create_sheet("top users")
    top.append(["user", *COLUMNS])
    for line in report.top_users:
        top.append(_cells(line))
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _pages(report: Report) -> Iterator[Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.27, 11.69))
    fig.suptitle(_title(report), fontsize=12)
    ax = fig.add_subplot(2, 1, 1)
    ax.axis("off")
    rows = [[str(c) for c in _cells(ln)] for ln in (*report.lines[:25], report.total)]
    table = ax.table(cellText=rows, colLabels=[report.by.value, *COLUMNS], loc="upper center")
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    chart = fig.add_subplot(2, 1, 2)
    lines = report.lines[:15]
    keys = [ln.key or "(none)" for ln in lines]
    chart.barh(keys, [float(ln.gpu_card_hours) for ln in lines], label="GPU card-hours")
    chart.barh(
        keys,
        [float(ln.npu_card_hours) for ln in lines],
        left=[float(ln.gpu_card_hours) for ln in lines],
        label="NPU card-hours",
    )
    chart.invert_yaxis()
    chart.set_xlabel("card-hours")
    chart.legend()
    yield fig

    fig = Figure(figsize=(8.27, 11.69))
    ax = fig.add_subplot(2, 1, 1)
    pools = report.utilisation
    ax.bar([u.pool for u in pools], [float(u.ratio) * 100 for u in pools], color="tab:green")
    ax.set_ylabel("allocated ÷ available card-hours (%)")
    ax.set_title("Pool utilisation")
    ax2 = fig.add_subplot(2, 1, 2)
    users = report.top_users
    ax2.barh([u.key for u in users], [float(u.card_hours) for u in users], color="tab:purple")
    ax2.invert_yaxis()
    ax2.set_title("Top users (card-hours)")
    yield fig


def to_pdf(report: Report) -> bytes:
    """Page 1: the table and a card-hour chart; page 2: pool utilisation and top users."""
    from matplotlib.backends.backend_pdf import PdfPages

    buf = io.BytesIO()
    with PdfPages(buf, metadata={"Title": _title(report), "Creator": "AIPool"}) as pdf:
        for fig in _pages(report):
            pdf.savefig(fig)
    return buf.getvalue()


def render(report: Report, fmt: str) -> bytes:
    if fmt == "csv":
        return to_csv(report).encode()
    if fmt == "xlsx":
        return to_xlsx(report)
    if fmt == "pdf":
        return to_pdf(report)
    raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


def decimal_or_str(value: Any) -> Any:
    """JSON-friendly: decimals as strings (exact)."""
    return str(value) if isinstance(value, Decimal) else value
