"""The portal's one clock: the app's ``CLOCK`` where it has one (tests), else the system's, in
UTC. Shares expire, charts end and months begin by it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from flask import current_app, has_app_context

from portal.models import utcnow


def now() -> datetime:
    clock: Callable[[], datetime] | None = (
        current_app.config.get("CLOCK") if has_app_context() else None
    )
    return clock() if clock else utcnow()
