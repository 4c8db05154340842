"""Pages: the audit log."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template, request
from flask_login import login_required

from portal.audit.service import search_query
from portal.pagination import page_of_query
from portal.web import current_access, session

bp = Blueprint("audit_pages", __name__)
PAGE = 50


class _Page:
    def __init__(self, page: int, page_size: int) -> None:
        self.page, self.page_size = page, page_size
        self.item_count: int | None = None


@bp.route("/audit")
@login_required
def index() -> str:
    filters: dict[str, Any] = {
        k: request.args[k] for k in ("actor", "action_prefix", "target_type") if request.args.get(k)
    }
    params = _Page(max(1, request.args.get("page", 1, type=int) or 1), PAGE)
    events = page_of_query(session(), search_query(current_access(), filters), params)
    pages = max(1, -(-(params.item_count or 0) // PAGE))
    return render_template(
        "audit/index.html", events=events, page=params.page, pages=pages, filters=filters
    )
