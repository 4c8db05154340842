"""Pages: the audit log, with names instead of ids, filters by date, actor, action and object,
and the filtered rows as CSV (UTF-8 with a byte-order mark, so that Excel reads Chinese
right; headers in the reader's language)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from flask import Blueprint, Response, render_template, request, stream_with_context
from flask_babel import get_timezone
from flask_login import login_required
from sqlalchemy import Select

from portal.audit.models import AuditEvent
from portal.audit.names import NAMED, Names, ids_named
from portal.audit.service import search_query
from portal.audit.words import action_text, known_actions, known_targets, target_text
from portal.errors import ValidationFailed
from portal.i18n import gettext
from portal.pagination import page_of_query
from portal.web import current_access, session

bp = Blueprint("audit_pages", __name__)
PAGE = 50
CSV_BATCH = 500  # events named per query batch while the CSV streams
FILTERS = ("since", "until", "actor", "action", "action_prefix", "target_type", "name")


class _Page:
    def __init__(self, page: int, page_size: int) -> None:
        self.page, self.page_size = page, page_size
        self.item_count: int | None = None


def _day(name: str) -> date | None:
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ValidationFailed({name: [gettext("A date such as 2025-03-31.")]}) from None


def _start_of(day: date) -> datetime:
    """Midnight of ``day`` in the site's time zone, in UTC (the log's time)."""
    zone = ZoneInfo(str(get_timezone() or "UTC"))
    return datetime.combine(day, time(), zone).astimezone(UTC)


def _filters() -> tuple[dict[str, str], dict[str, Any]]:
    """The filters as the form shows them, and as the search takes them (dates as instants in
    the site's time zone, the last day included; an object's name as its ids)."""
    shown = {k: request.args.get(k, "").strip()[:64] for k in FILTERS}
    shown = {k: v for k, v in shown.items() if v}
    query: dict[str, Any] = {
        k: shown[k] for k in ("actor", "action", "action_prefix", "target_type") if k in shown
    }
    since, until = _day("since"), _day("until")
    if since:
        query["since"] = _start_of(since)
    if until:
        query["until"] = _start_of(until + timedelta(days=1))
    if shown.get("name"):
        kinds = [shown["target_type"]] if shown.get("target_type") else list(NAMED)
        ids: set[str] = set()
        for kind in kinds:
            ids |= ids_named(session(), kind, shown["name"])
        query["target_ids"] = ids
        if not shown.get("target_type"):
            query["target_type_in"] = kinds
    return shown, query


def _search(query: dict[str, Any]) -> Select[AuditEvent]:
    stmt = search_query(current_access(), query)
    if "target_type_in" in query:  # a name without a kind: any kind that has names
        stmt = stmt.where(AuditEvent.target_type.in_(query["target_type_in"]))
    return stmt


@bp.route("/audit")
@login_required
def index() -> str | tuple[str, int]:
    error: ValidationFailed | None = None
    try:
        shown, query = _filters()
    except ValidationFailed as exc:
        shown, query, error = {}, {}, exc
    params = _Page(max(1, request.args.get("page", 1, type=int) or 1), PAGE)
    events = page_of_query(session(), _search(query), params)
    pages = max(1, -(-(params.item_count or 0) // PAGE))
    page = render_template(
        "audit/index.html",
        events=events,
        names=Names(session(), events),
        page=params.page,
        pages=pages,
        total=params.item_count or 0,
        filters=shown,
        error=error,
        actions=known_actions(),
        targets=known_targets(),
        action_text=action_text,
        target_text=target_text,
    )
    return (page, 422) if error else page


def _headers() -> list[str]:
    return [
        gettext("Time"),
        gettext("Actor"),
        gettext("Action"),
        gettext("Action code"),
        gettext("Object type"),
        gettext("Object"),
        gettext("Object ID"),
        gettext("Domain"),
        gettext("Before"),
        gettext("After"),
    ]


def _rows(stmt: Select[AuditEvent]) -> Iterator[str]:
    """The CSV, a batch of events at a time (each batch named in a few queries)."""
    zone = ZoneInfo(str(get_timezone() or "UTC"))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(_headers())
    yield "\ufeff" + out.getvalue()
    last: int | None = None
    while True:  # newest first, by id: events logged while this runs do not shift the batches
        more = stmt if last is None else stmt.where(AuditEvent.id < last)
        batch = list(session().scalars(more.limit(CSV_BATCH)))
        if not batch:
            return
        last = batch[-1].id
        names = Names(session(), batch)
        out.seek(0)
        out.truncate()
        for e in batch:
            writer.writerow(
                [
                    e.at.astimezone(zone).isoformat(timespec="seconds"),
                    e.actor,
                    action_text(e.action),
                    e.action,
                    target_text(e.target_type),
                    names.target(e),
                    e.target_id,
                    names.domain(e) if e.domain_id is not None else "",
                    _json(e.before),
                    _json(e.after),
                ]
            )
        yield out.getvalue()


def _json(snapshot: dict[str, Any] | None) -> str:
    return json.dumps(snapshot, ensure_ascii=False, sort_keys=True) if snapshot else ""


@bp.route("/audit.csv")
@login_required
def export() -> Response:
    _, query = _filters()
    stmt = _search(query)  # the caller's rights are checked here, before the answer starts
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Response(
        stream_with_context(_rows(stmt)),
        mimetype="text/csv",
        headers={
            "Content-Disposition": f'attachment; filename="aipool-audit-{stamp}.csv"',
            "Cache-Control": "no-store",
        },
    )
