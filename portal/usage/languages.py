"""The languages users chose in the portal, for mail sent without a request (accounting's
alerts and monthly reports): the ``aipool`` command hands :func:`saved_languages` to
accounting, which imports nothing of the portal (:data:`accounting.edge.SAVED_LANGUAGES`)."""

from __future__ import annotations

from sqlalchemy import Engine, inspect, select
from sqlalchemy.orm import Session

from portal.i18n import LOCALES
from portal.identity.models import User


def saved_languages(engine: Engine) -> dict[str, str]:
    """``{user name or address: locale}`` of the active users who chose a language, read from
    the portal's tables in ``engine``; empty where it holds none (accounting on its own
    database)."""
    if not inspect(engine).has_table(User.__tablename__):
        return {}
    with Session(engine) as s:
        rows = s.execute(
            select(User.username, User.email, User.language).where(
                User.active.is_(True), User.language.in_(list(LOCALES))
            )
        ).all()
    out: dict[str, str] = {}
    for name, address, language in rows:
        out[name] = str(language)
        if address:
            out[address] = str(language)
    return out
