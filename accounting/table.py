"""A report's table in the reader's words, which every file form shares: its title, its
header row and its cells, the site it comes from, and the error of a form that cannot be
written. :mod:`accounting.export` writes CSV and XLSX from it, :mod:`accounting.pdf` the PDF."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accounting import labels
from accounting.report import Line, Report
from translations import N_, Message, gettext

COLUMNS = tuple(labels.COLUMNS)
TITLE = N_("Usage by %(by)s, %(start)s to %(end)s (UTC)")


@dataclass(frozen=True, slots=True)
class Brand:
    """The site a report is from: its name (``SITE_NAME``) and logo file (``SITE_LOGO``; the
    PDF shows PNG and JPEG logos, other kinds by name only)."""

    name: str = "AIPool"
    logo: Path | None = None


class ExportError(ValueError):
    """A report that cannot be written in this form; ``message`` says why in any language."""

    def __init__(self, message: Message) -> None:
        super().__init__(str(message))
        self.message = message


def title(report: Report, locale: str | None) -> str:
    return gettext(
        locale,
        TITLE,
        by=labels.dim(locale, report.by),
        start=labels.when(report.start, locale),
        end=labels.when(report.end, locale),
    )


def header(report: Report, locale: str | None) -> list[str]:
    """The first row: what the report groups by, then each amount, in words."""
    amounts = (labels.label(locale, t) for t in labels.COLUMNS.values())
    return [labels.dim(locale, report.by), *amounts]


def cells(line: Line, locale: str | None, *, total: bool = False) -> list[Any]:
    key = labels.label(locale, labels.TOTAL) if total else line.key
    return [key, *(getattr(line, c) for c in COLUMNS)]
