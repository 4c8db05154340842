"""A user's home domain: the domain an account was made in, whose admins may manage it. The
migration gives existing users the one domain they belong to; a domain admin who adds an
account made elsewhere to a project of theirs still cannot reset its password."""

from __future__ import annotations

from pathlib import Path

from flask_migrate import downgrade, upgrade
from sqlalchemy import text

from portal.extensions import db
from portal.identity.models import User
from tests.unit.portal.conftest import Env, make_app


def test_the_migration_gives_users_their_one_domain(tmp_path: Path) -> None:
    app = make_app(tmp_path / "old.db", tmp_path)
    with app.app_context():
        upgrade(revision="0010")
        rows = [
            "INSERT INTO domains (id, name, description) VALUES (1, 'a', ''), (2, 'b', '')",
            "INSERT INTO projects (id, domain_id, name, description, qos) VALUES "
            "(1, 1, 'pa', '', 'normal'), (2, 2, 'pb', '', 'normal')",
            "INSERT INTO users (id, username, display_name, email, password_hash, "
            "is_platform_admin, active, session_epoch, created_at, password_changed_at) "
            "SELECT i, n, '', '', 'x', a, 1, 0, '2026-01-01 00:00:00', '2026-01-01 00:00:00' "
            "FROM (SELECT 1 AS i, 'one' AS n, 0 AS a UNION SELECT 2, 'two', 0 "
            "UNION SELECT 3, 'none', 0 UNION SELECT 4, 'boss', 1 UNION SELECT 5, 'admin_a', 0)",
            "INSERT INTO memberships (project_id, user_id, role_id) "
            "SELECT p, u, (SELECT id FROM roles WHERE name = 'member') FROM "
            "(SELECT 1 AS p, 1 AS u UNION SELECT 1, 2 UNION SELECT 2, 2 UNION SELECT 2, 4)",
            "INSERT INTO domain_admins (domain_id, user_id) VALUES (1, 5)",
        ]
        for sql in rows:
            db.session.execute(text(sql))
        db.session.commit()
        upgrade()
        homes = dict(db.session.execute(text("SELECT username, home_domain_id FROM users")).all())
        assert homes == {"one": 1, "two": None, "none": None, "boss": None, "admin_a": 1}
        downgrade(revision="0010")
        db.session.remove()
        db.engine.dispose()


def test_adding_an_account_made_elsewhere_hands_over_no_password(env: Env) -> None:
    """nobody was made by the platform admin, in no domain: erin adds them to nlp, and may
    still neither reset their password nor deactivate them."""
    nobody = env.world.users["nobody"]
    erin = env.api("erin")
    r = erin.post(
        f"/api/v1/projects/{env.world.projects['nlp']}/members",
        json={"username": "nobody", "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 201
    with env.app.app_context():
        before = db.session.get(User, nobody)
        assert before is not None
        saved = (before.password_hash, before.active, before.home_domain_id)
    assert erin.post(f"/api/v1/users/{nobody}/password", json={}).status_code == 403
    assert erin.patch(f"/api/v1/users/{nobody}", json={"active": False}).status_code == 403
    with env.app.app_context():
        after = db.session.get(User, nobody)
        assert after is not None
        assert (after.password_hash, after.active, after.home_domain_id) == saved
    # a user erin made is hers
    made = erin.post(
        "/api/v1/users", json={"username": "fresh", "project_id": env.world.projects["nlp"]}
    )
    assert made.status_code == 201
    assert erin.post(f"/api/v1/users/{made.json['id']}/password", json={}).status_code == 200
    assert env.api("admin").post(f"/api/v1/users/{nobody}/password", json={}).status_code == 200


def test_a_deleted_domain_leaves_its_users_to_the_platform_admins(env: Env) -> None:
    admin = env.api("admin")
    domain = admin.post("/api/v1/domains", json={"name": "tmpdom"}).json["id"]
    project = admin.post("/api/v1/projects", json={"domain_id": domain, "name": "tmpp"}).json
    made = admin.post("/api/v1/users", json={"username": "leaver", "project_id": project["id"]})
    assert made.json["home_domain_id"] == domain
    user = made.json["id"]
    assert admin.delete(f"/api/v1/projects/{project['id']}/members/{user}").status_code == 204
    assert admin.delete(f"/api/v1/projects/{project['id']}").status_code == 204
    assert admin.delete(f"/api/v1/domains/{domain}").status_code == 204
    assert admin.get(f"/api/v1/users/{user}").json["home_domain_id"] is None
