"""Pagination of SQL selects and of in-memory lists for ``@blp.paginate()`` views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

T = TypeVar("T")


class PageParams(Protocol):
    page: int
    page_size: int
    item_count: int | None


def count_of(stmt: Select[Any]) -> Select[int]:
    """``SELECT count(*)`` of ``stmt``'s rows. Its ORDER BY is dropped (unless a LIMIT needs
    it): with it, SQLite materialises and sorts every row of the subquery before counting
    (~200 ms for 100,000 rows); without, it counts from a covering index (~10 ms)."""
    if stmt._limit_clause is None and stmt._offset_clause is None:
        stmt = stmt.order_by(None)
    return select(func.count()).select_from(stmt.subquery())


def page_of_query(
    session: Session,
    stmt: Select[Any],
    params: PageParams,
    *,
    count: Select[int] | None = None,
) -> list[Any]:
    """One page of ``stmt``'s first column; sets the total count on ``params`` (from
    ``count`` when given: a cheaper query for the same total)."""
    total = session.scalar(count if count is not None else count_of(stmt))
    params.item_count = total or 0
    offset = (params.page - 1) * params.page_size
    if offset >= (total or 0):
        return []  # past the end (also keeps huge page numbers away from the database)
    return list(session.scalars(stmt.offset(offset).limit(params.page_size)))


def page_of_list(items: Sequence[T], params: PageParams) -> list[T]:
    params.item_count = len(items)
    offset = (params.page - 1) * params.page_size
    return list(items[offset : offset + params.page_size])
