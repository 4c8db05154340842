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


def page_of_query(session: Session, stmt: Select[Any], params: PageParams) -> list[Any]:
    """One page of ``stmt``'s first column; sets the total count on ``params``."""
    params.item_count = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    offset = (params.page - 1) * params.page_size
    if offset >= params.item_count:
        return []  # past the end (also keeps huge page numbers away from the database)
    return list(session.scalars(stmt.offset(offset).limit(params.page_size)))


def page_of_list(items: Sequence[T], params: PageParams) -> list[T]:
    params.item_count = len(items)
    offset = (params.page - 1) * params.page_size
    return list(items[offset : offset + params.page_size])
