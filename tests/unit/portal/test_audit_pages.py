"""The audit page: names instead of ids (a deleted object by its last recorded name and its
id), actions in words, filters by date range, actor, action and object, and the filtered rows
as CSV in the reader's language, read back with the csv module."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from portal.audit.models import AuditEvent
from portal.audit.names import Names
from portal.extensions import db
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login

ZH = {"Accept-Language": "zh-CN"}


def changes(env: Env) -> None:
    """erin adds nobody to vision, makes and deletes a project; tina changes cs101."""
    erin, tina = env.api("erin"), env.api("tina")
    vision, cs101 = env.world.projects["vision"], env.world.projects["cs101"]
    r = erin.post(
        f"/api/v1/projects/{vision}/members",
        json={"username": "nobody", "role_id": env.world.roles["viewer"]},
    )
    assert r.status_code == 201
    made = erin.post(
        "/api/v1/projects", json={"domain_id": env.world.domains["research"], "name": "tmpproj"}
    )
    assert made.status_code == 201
    assert erin.delete(f"/api/v1/projects/{made.json['id']}").status_code == 204
    assert tina.patch(f"/api/v1/projects/{cs101}", json={"description": "x"}).status_code == 200


def read_csv(body: bytes) -> list[list[str]]:
    assert body.startswith("\ufeff".encode())  # Excel reads UTF-8 (Chinese) with the BOM
    return list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))


def test_events_show_names_not_ids(env: Env) -> None:
    changes(env)
    page = login(env, "admin").get("/audit").get_data(as_text=True)
    assert "Added a project member" in page
    assert "nobody in vision" in page  # the membership by its user's and project's names
    assert "Viewer" in page  # the role it gave, by name
    made = "tmpproj (deleted, id "
    assert made in page  # a project deleted since: the name the log recorded, and its id
    zh = login(env, "admin").get("/audit", headers=ZH).get_data(as_text=True)
    assert "添加项目成员" in zh
    assert "vision 中的 nobody" in zh
    assert "tmpproj（已删除，ID " in zh


def test_names_of_objects_the_log_never_named_keep_their_id(env: Env) -> None:
    with env.app.app_context():
        event = AuditEvent(
            actor="admin", action="project.update", target_type="project", target_id="9999"
        )
        event.after = {"role_id": 9998}
        names = Names(db.session, [event])
        assert names.target(event) == "id 9999 (deleted)"
        assert names.changes(event)[0].after == "id 9998 (deleted)"


def test_filters_by_actor_action_object_and_date(env: Env) -> None:
    changes(env)
    admin = login(env, "admin")
    page = admin.get("/audit?actor=tina").get_data(as_text=True)
    assert "Changed a project" in page
    assert "nobody in vision" not in page
    page = admin.get("/audit?action=member.add").get_data(as_text=True)
    assert "1 event" in page
    page = admin.get("/audit?target_type=project&name=tmpproj").get_data(as_text=True)
    assert "2 events" in page  # created and deleted: found by the name of a deleted project
    page = admin.get("/audit?name=cs101").get_data(as_text=True)
    assert "Changed a project" in page
    assert "tmpproj" not in page
    today = datetime.now(UTC).date()
    tomorrow = today + timedelta(days=1)
    assert "No events match." in admin.get(f"/audit?since={tomorrow}").get_data(as_text=True)
    yesterday = today - timedelta(days=1)
    page = admin.get(f"/audit?since={yesterday}&until={today}&actor=erin")
    assert "Added a project member" in page.get_data(as_text=True)
    past = admin.get(f"/audit?until={yesterday}").get_data(as_text=True)
    assert "No events match." in past
    bad = admin.get("/audit?since=31.03.2025", headers=ZH)
    assert bad.status_code == 422
    assert "请输入日期，例如 2025-03-31。" in bad.get_data(as_text=True)


def test_the_csv_holds_the_filtered_rows_in_the_readers_language(env: Env) -> None:
    changes(env)
    admin = login(env, "admin")
    r = admin.get("/audit.csv?target_type=project&name=tmpproj", headers=ZH)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/csv")
    assert "attachment" in r.headers["Content-Disposition"]
    rows = read_csv(r.data)
    assert rows[0][:4] == ["时间", "操作人", "操作", "操作代码"]
    body = rows[1:]
    assert [row[3] for row in body] == ["project.delete", "project.create"]
    assert {row[1] for row in body} == {"erin"}
    assert body[0][2] == "删除项目"
    assert body[0][5].startswith("tmpproj（已删除")
    assert body[0][7] == "research"
    # the English one, every event, newest first, as many as the page counts
    english = read_csv(admin.get("/audit.csv").data)
    assert english[0][0] == "Time"
    with env.app.app_context():
        ids = list(db.session.scalars(select(AuditEvent.id).order_by(AuditEvent.id.desc())))
    assert len(english) - 1 == len(ids)
    stamps = [datetime.fromisoformat(row[0]) for row in english[1:]]
    assert stamps == sorted(stamps, reverse=True)


def test_a_domain_admins_csv_holds_their_domains_events_only(env: Env) -> None:
    changes(env)
    rows = read_csv(login(env, "erin").get("/audit.csv").data)[1:]
    assert rows
    assert {row[7] for row in rows} == {"research"}
    assert "tina" not in {row[1] for row in rows}


@pytest.mark.parametrize("path", ["/audit", "/audit.csv"])
def test_members_read_no_audit_log(env: Env, path: str) -> None:
    assert login(env, "alice").get(path).status_code == 403
