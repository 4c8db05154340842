"""The root helper's ``remove-workspace``: a dataset's workspace goes whole, whoever's entries
are in it, without following a link out of it; any other store, id, owner or a link in the
workspace's place is refused and audited. Run as root, on a copy installed as a site would."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aipool.roothelper as helper

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the helper runs only as root")


def _uid(name: str) -> int:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return 0


def _someone() -> int:
    for name in ("bob", "alice", "nobody"):
        if (uid := _uid(name)) != 0:
            return uid
    pytest.fail("this machine has no ordinary account")


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Path]:
    sbin, store, audit = tmp_path / "sbin", tmp_path / "datasets", tmp_path / "audit.log"
    sbin.mkdir()
    store.mkdir(mode=0o711)
    script = sbin / "aipool-helper"
    shutil.copy(helper.__file__, script)
    script.chmod(0o755)
    conf = sbin / "aipool-helper.json"
    conf.write_text(json.dumps({"roots": [], "stores": [str(store)], "audit": str(audit)}))
    conf.chmod(0o644)
    return {"script": script, "store": store, "audit": audit}


def call(site: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-I", str(site["script"]), "remove-workspace", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _workspace(store: Path, dataset_id: int) -> Path:
    """``<store>/<id>/workspace``, the caller's (the portal's), with a writer's entries in it
    that only the writer may enter, and links out of it."""
    caller = _uid("aipool")
    top = store / str(dataset_id)
    workspace = top / "workspace"
    (workspace / "keep" / "deeper").mkdir(parents=True)
    (workspace / "keep" / "deeper" / "f").write_text("theirs")
    for path in (top, workspace):
        os.chown(path, caller, -1)
    writer = _someone()
    for path in (workspace / "keep", workspace / "keep" / "deeper"):
        os.chown(path, writer, -1)
        path.chmod(0o700)
    return workspace


def test_it_removes_a_workspace_whole_and_follows_no_link(
    site: dict[str, Path], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary").write_text("stays")
    workspace = _workspace(site["store"], 7)
    (workspace / "keep" / "out").symlink_to(outside)
    (workspace / "up").symlink_to("../..")
    done = call(site, str(site["store"]), "7")
    assert done.returncode == 0, done.stderr
    assert not workspace.exists()
    assert workspace.parent.is_dir()  # the dataset's directory is the portal's to remove
    assert (outside / "canary").read_text() == "stays"
    again = call(site, str(site["store"]), "7")  # gone already: nothing to do
    assert again.returncode == 0, again.stderr
    lines = [json.loads(line) for line in site["audit"].read_text().splitlines()]
    assert [line["done"] for line in lines] == [True, True]


@pytest.mark.parametrize(
    "args",
    [
        ("{other}", "7"),  # a store the configuration does not list
        ("{store}", "07"),
        ("{store}", "../7"),
        ("{store}", "7/workspace"),
        ("{store}", "0"),
        ("{store}",),
    ],
)
def test_other_stores_and_ids_are_refused(
    site: dict[str, Path], tmp_path: Path, args: tuple[str, ...]
) -> None:
    workspace = _workspace(site["store"], 7)
    other = tmp_path / "other"
    other.mkdir()
    words = [a.format(store=site["store"], other=other) for a in args]
    done = call(site, *words)
    assert done.returncode == 2
    assert workspace.is_dir()
    [line] = [json.loads(line) for line in site["audit"].read_text().splitlines()]
    assert line["done"] is False


def test_a_workspace_not_the_callers_or_a_link_is_refused(
    site: dict[str, Path], tmp_path: Path
) -> None:
    workspace = _workspace(site["store"], 7)
    os.chown(workspace.parent, _someone(), -1)  # someone else's dataset directory
    assert call(site, str(site["store"]), "7").returncode == 2
    assert workspace.is_dir()
    victim = tmp_path / "victim"
    (victim / "workspace").mkdir(parents=True)
    (victim / "workspace" / "f").write_text("stays")
    (site["store"] / "8").symlink_to(victim)  # a link in a dataset directory's place
    assert call(site, str(site["store"]), "8").returncode == 2
    assert (victim / "workspace" / "f").read_text() == "stays"
