"""API: usage reports of the caller's tenants, as JSON or as CSV / XLSX / PDF files."""

from __future__ import annotations

from typing import Any

from flask import Flask, Response
from flask_smorest import Blueprint

from accounting import export
from portal.slurm import slurm
from portal.usage import service
from portal.usage.schemas import (
    ExportQuerySchema,
    ReportSchema,
    UsageQuerySchema,
    args_of,
    report_data,
)
from portal.web import AuthedView, current_access, session

blp = Blueprint("usage", __name__, url_prefix="/api/v1/usage", description="Usage")

MIME = {
    "csv": "text/csv",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
}


@blp.route("")
class Usage(AuthedView):
    @blp.arguments(UsageQuerySchema, location="query")
    @blp.response(200, ReportSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """Card-hours, CPU-hours, waits by domain, project, user, GPU type or pool."""
        rep = service.report(session(), current_access(), args_of(args), slurm())
        return report_data(rep)


@blp.route("/export")
class Export(AuthedView):
    @blp.arguments(ExportQuerySchema, location="query")
    @blp.response(200, description="the report as a CSV, XLSX or PDF file")
    def get(self, args: dict[str, Any]) -> Response:
        """The same report as a file."""
        fmt = args.pop("format")
        rep = service.report(session(), current_access(), args_of(args), slurm())
        name = f"usage-{rep.by.value}-{rep.start:%Y%m%d%H}-{rep.end:%Y%m%d%H}.{fmt}"
        return Response(
            export.render(rep, fmt),
            mimetype=MIME[fmt],
            headers={"Content-Disposition": f"attachment; filename={name}"},
        )


def register(app: Flask) -> None:
    """The usage API and pages."""
    from portal.extensions import api
    from portal.usage.pages import bp as pages

    api.register_blueprint(blp)
    app.register_blueprint(pages)
