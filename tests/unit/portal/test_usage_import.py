"""The usage page says where the scheduled sacct import got to; "import now" is a platform
admin's, audited, and says clearly when this portal cannot reach sacct."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from accounting.models import IngestState
from portal.audit.models import AuditEvent
from portal.extensions import db
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login


def _csrf(page: str) -> str:
    return page.split('name="csrf_token" value="')[1].split('"', maxsplit=1)[0]


def test_the_page_shows_the_last_import(env: Env) -> None:
    page = login(env, "alice").get("/usage").get_data(as_text=True)
    assert "No import from sacct yet" in page
    assert 'id="import-now"' not in page  # not a platform admin
    with env.app.app_context():
        db.session.add(
            IngestState(
                cluster="aipool",
                imported_until=datetime(2026, 11, 30, 9, 58, tzinfo=UTC),
                updated_at=datetime(2026, 11, 30, 10, 0, 5, tzinfo=UTC),
            )
        )
        db.session.commit()
    page = login(env, "alice").get("/usage").get_data(as_text=True)
    assert "Last import from sacct (aipool): 11/30/26, 10:00 AM, jobs up to 11/30/26, 9:58 AM." in (
        " ".join(page.split())
    )


def test_import_now_is_for_platform_admins_and_says_why_it_cannot(env: Env) -> None:
    alice = login(env, "alice")
    token = _csrf(alice.get("/jobs/new").get_data(as_text=True))
    assert alice.post("/usage/import", data={"csrf_token": token}).status_code == 403
    admin = login(env, "admin")
    page = admin.get("/usage").get_data(as_text=True)
    assert 'id="import-now"' in page
    r = admin.post("/usage/import", data={"csrf_token": _csrf(page)}, follow_redirects=True)
    assert r.status_code == 200
    # the unit tests' Slurm is a stand-in without sacct: the admin is told, nothing is written
    assert "no sacct client" in r.get_data(as_text=True)
    with env.app.app_context():
        actions = db.session.scalars(select(AuditEvent.action)).all()
    assert "usage.import" not in actions
