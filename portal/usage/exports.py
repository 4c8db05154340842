"""A usage report as a file in the reader's language, headed by the site's name and logo."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

from flask import Response, current_app

from accounting import export
from accounting.report import Report
from portal.errors import Unavailable
from portal.i18n import current

MIME = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
}


def brand() -> export.Brand:
    """The site's name (``SITE_NAME``) and logo (``SITE_LOGO``), checked at start-up."""
    logo = current_app.config.get("SITE_LOGO")
    return export.Brand(current_app.config["SITE_NAME"], Path(logo) if logo else None)


def zone() -> ZoneInfo:
    """The site's time zone (``TIMEZONE``): the days of the usage pages are its days."""
    return ZoneInfo(str(current_app.config.get("TIMEZONE") or "UTC"))


def download(rep: Report, fmt: str) -> Response:
    """The report as an attachment named after what it holds."""
    try:
        data = export.render(rep, fmt, locale=current(), brand=brand())
    except export.ExportError as exc:  # a Chinese PDF on a host without the CJK font
        raise Unavailable(exc.message.render(current())) from exc
    name = f"usage-{rep.by.value}-{rep.start:%Y%m%d%H}-{rep.end:%Y%m%d%H}.{fmt}"
    return Response(
        data,
        mimetype=MIME[fmt].split(";")[0],
        content_type=MIME[fmt],
        headers={"Content-Disposition": f"attachment; filename={name}"},
    )
