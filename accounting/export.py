"""A report as CSV, XLSX (openpyxl) or PDF with charts (:mod:`accounting.pdf`), in the
reader's language.

Headers, sheet names and titles are words in the reader's language (``卡时``, "GPU
card-hours"), never the attribute names; amounts stay exact decimals, so a spreadsheet reads
them as numbers. A CSV file starts with a UTF-8 byte order mark, which Excel needs to read
Chinese names; a site's name (and, in the PDF, its logo) heads the report.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

from accounting import labels
from accounting.pdf import to_pdf
from accounting.report import Dim, Report
from accounting.table import Brand, ExportError, cells, header, title
from translations import N_, gettext

__all__ = ["FORMATS", "Brand", "ExportError", "decimal_or_str", "render", "to_csv", "to_xlsx"]

FORMATS = ("csv", "xlsx", "pdf")


def to_csv(report: Report, locale: str | None = None) -> str:
    """One line per group and a total line; amounts as exact decimals."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header(report, locale))
    for line in report.lines:
        w.writerow(cells(line, locale))
    w.writerow(cells(report.total, locale, total=True))
    return out.getvalue()


SHEETS = {
    "usage": N_("Usage"),
    "utilisation": N_("Pool utilisation"),
    "top_users": N_("Top users"),
}


def sheet_names(locale: str | None) -> dict[str, str]:
    return {k: gettext(locale, v) for k, v in SHEETS.items()}


def to_xlsx(report: Report, locale: str | None = None, brand: Brand | None = None) -> bytes:
    """Sheets of usage, pool utilisation and top users, named and headed in words."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    brand = brand or Brand()
    names = sheet_names(locale)
    wb = Workbook()
    ws = wb.worksheets[0]  # a new workbook has one sheet
    ws.title = names["usage"]
    ws.append([brand.name])
    ws.append([title(report, locale)])
    ws.append(header(report, locale))
    for line in report.lines:
        ws.append(cells(line, locale))
    ws.append(cells(report.total, locale, total=True))
    for cell in (*ws[1], *ws[3], *ws[ws.max_row]):
        cell.font = Font(bold=True)
    util = wb.create_sheet(names["utilisation"])
    util.append([labels.label(locale, t) for t in labels.UTILISATION.values()])
    for u in report.utilisation:
        util.append([u.pool, u.gpu_cards, u.npu_cards, u.gpu_card_hours, u.npu_card_hours, u.ratio])
        util.cell(util.max_row, 6).number_format = "0.00%"
    top = wb.create_sheet(names["top_users"])
    top.append([labels.dim(locale, Dim.USER), *header(report, locale)[1:]])
    for line in report.top_users:
        top.append(cells(line, locale))
    for sheet in (util, top):
        for cell in sheet[1]:
            cell.font = Font(bold=True)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def render(
    report: Report, fmt: str, *, locale: str | None = None, brand: Brand | None = None
) -> bytes:
    """The report as a file: CSV (UTF-8 with a byte order mark), XLSX or PDF."""
    if fmt == "csv":
        return to_csv(report, locale).encode("utf-8-sig")
    if fmt == "xlsx":
        return to_xlsx(report, locale, brand)
    if fmt == "pdf":
        return to_pdf(report, locale, brand)
    raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")


def decimal_or_str(value: Any) -> Any:
    """JSON-friendly: decimals as strings (exact)."""
    return str(value) if isinstance(value, Decimal) else value
