"""A dataset's directory lets in exactly those the portal lets read it, as the kernel sees it
(``runuser``): its owner for a private one, its project's readers for a project one, everyone
for a public one; adding or removing a member changes who may enter, without a job, at once."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.portal.conftest import Env
from tests.unit.portal.test_datasets import configure, make_dataset, upload

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setfacl") is None, reason="root and setfacl (acl)"
)


def _unix(*names: str) -> None:
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            pytest.fail(f"{name} has no Unix account here: run `aipool lab up` first")


def _reads(user: str, path: Path) -> bool:
    done = subprocess.run(
        ["runuser", "-u", user, "--", "cat", str(path)], capture_output=True, check=False
    )
    return done.returncode == 0


@pytest.fixture
def store(env: Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A store where other users could reach it, were it not for its gates."""
    base = Path(tempfile.mkdtemp(prefix="aipool-acl-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield configure(env, base, monkeypatch)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_who_may_read_a_dataset_on_disk_follows_the_portal(env: Env, store: Path) -> None:
    _unix("alice", "bob", "dave")
    nlp = env.world.projects["nlp"]
    private = make_dataset(env, "alice", "nlp", name="mine", visibility="private")
    shared = make_dataset(env, "alice", "nlp", name="ours", visibility="project")
    public = make_dataset(env, "alice", "nlp", name="all", visibility="public")
    for ds in (private, shared, public):
        assert upload(env, "alice", ds, {"notes.txt": b"alice's words\n"}).status_code == 201
    note = {ds: store / str(ds) / "v1" / "notes.txt" for ds in (private, shared, public)}
    assert oct((store).stat().st_mode & 0o777) == "0o711"
    assert _reads("alice", note[private])
    assert _reads("alice", note[shared])
    assert not _reads("bob", note[private])  # another tenant
    assert not _reads("bob", note[shared])
    assert _reads("bob", note[public])

    admin = env.api("admin")
    r = admin.post(
        f"/api/v1/projects/{nlp}/members",
        json={"username": "bob", "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 201, r.json
    assert _reads("bob", note[shared])  # a member of nlp now
    assert not _reads("bob", note[private])  # still alice's alone
    bob = env.world.users["bob"]
    assert admin.delete(f"/api/v1/projects/{nlp}/members/{bob}").status_code == 204
    assert not _reads("bob", note[shared])  # and no longer

    r = env.api("alice").patch(f"/api/v1/datasets/{private}", json={"visibility": "project"})
    assert r.status_code == 200, r.json
    assert not _reads("dave", note[private])  # dave is in cs101, not nlp
    r = env.api("alice").patch(f"/api/v1/datasets/{private}", json={"visibility": "public"})
    assert r.status_code == 200, r.json
    assert _reads("dave", note[private])


def test_a_role_that_loses_project_read_closes_the_projects_shares_on_disk(
    env: Env, store: Path
) -> None:
    """A project share reaches those who may see the project (portal/sharing.py): when a
    custom role stops granting project.read, its holders lose the shared dataset's files in
    the same commit, as the portal's own check does."""
    _unix("alice", "dave")
    admin = env.api("admin")
    looker = admin.post("/api/v1/roles", json={"name": "looker", "permissions": ["project.read"]})
    assert looker.status_code == 201, looker.json
    vision = env.world.projects["vision"]
    r = admin.post(
        f"/api/v1/projects/{vision}/members",
        json={"username": "dave", "role_id": looker.json["id"]},
    )
    assert r.status_code == 201, r.json
    ds = make_dataset(env, "alice", "nlp", name="lent", visibility="private")
    assert upload(env, "alice", ds, {"notes.txt": b"for vision\n"}).status_code == 201
    r = env.api("alice").post(
        f"/api/v1/datasets/{ds}/shares", json={"grantee_kind": "project", "grantee_id": vision}
    )
    assert r.status_code == 201, r.json
    note = store / str(ds) / "v1" / "notes.txt"
    assert _reads("dave", note)
    assert env.api("dave").get(f"/api/v1/datasets/{ds}").status_code == 200
    r = admin.patch(f"/api/v1/roles/{looker.json['id']}", json={"permissions": ["jobs.submit"]})
    assert r.status_code == 200, r.json
    assert env.api("dave").get(f"/api/v1/datasets/{ds}").status_code == 404
    assert not _reads("dave", note)
