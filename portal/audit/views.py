"""API: search the audit log (platform admins; domain admins for their domains)."""

from __future__ import annotations

from typing import Any

from portal.audit.models import AuditEvent
from portal.audit.schemas import AuditEventSchema, AuditQuerySchema
from portal.audit.service import search_query
from portal.pagination import PageParams, page_of_query
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("audit", __name__, url_prefix="/api/v1/audit", description="Audit log")


@blp.route("")
class Audit(AuthedView):
    @blp.arguments(AuditQuerySchema, location="query")
    @blp.response(200, AuditEventSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[AuditEvent]:
        return page_of_query(session(), search_query(current_access(), args), pagination_parameters)
