"""The root helper: its three calls do what they say, and every other call, every foreign
root, system account, odd name, planted link and someone else's directory is refused and
audited. Run as root (it refuses anything else), on a copy installed as a site would."""

from __future__ import annotations

import grp
import io
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import aipool.roothelper as helper
from tests.unit import helpersite

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the helper runs only as root")


_someone = helpersite.someone


def _group() -> str:
    for group in ("aipool", "nogroup"):
        try:
            grp.getgrnam(group)
            return group
        except KeyError:
            continue
    pytest.fail("this machine has no aipool or nogroup group")


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Path]:
    """The helper installed in its own directory with its configuration beside it."""
    sbin, root, audit = tmp_path / "sbin", tmp_path / "users", tmp_path / "audit.log"
    sbin.mkdir()
    root.mkdir(mode=0o711)
    script = sbin / "aipool-helper"
    shutil.copy(helper.__file__, script)
    script.chmod(0o755)
    conf = sbin / "aipool-helper.json"
    conf.write_text(json.dumps({"roots": [str(root)], "group": _group(), "audit": str(audit)}))
    conf.chmod(0o644)
    return {"script": script, "root": root, "audit": audit, "conf": conf}


def call(
    site: dict[str, Path], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", str(site["script"]), *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def audited(site: dict[str, Path]) -> list[dict[str, object]]:
    return [json.loads(line) for line in site["audit"].read_text().splitlines()]


def test_it_makes_a_users_directory_and_a_runs_and_removes_the_run(
    site: dict[str, Path],
) -> None:
    user, root = _someone(), site["root"]
    entry, gid = pwd.getpwnam(user), grp.getgrnam(_group()).gr_gid
    done = call(site, "user-dir", str(root), user)
    assert done.returncode == 0, done.stderr
    st = (root / user).stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (entry.pw_uid, gid, 0o2750)
    name = "ab" * 16
    done = call(site, "run-dir", str(root), user, name)
    assert done.returncode == 0
    assert done.stdout.strip() == str(root / user / name)
    st = (root / user / name).stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (entry.pw_uid, gid, 0o2750)
    (root / user / name / "out").mkdir()
    (root / user / name / "out" / "log.txt").write_text("done")
    assert call(site, "remove-run", str(root), user, name).returncode == 0
    assert not (root / user / name).exists()
    assert call(site, "remove-run", str(root), user, name).returncode == 0  # gone: fine
    assert [a["done"] for a in audited(site)] == [True, True, True, True]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["chown", "x", "y"], "usage"),
        (["user-dir", "/etc", "{user}"], "not a root this helper serves"),
        (["user-dir", "{root}/../users", "{user}"], "not a root this helper serves"),
        (["user-dir", "{root}", "root"], "system account"),
        (["user-dir", "{root}", "daemon"], "system account"),
        (["user-dir", "{root}", "no-such-user"], "no such user"),
        (["user-dir", "{root}", "../etc"], "not a user name"),
        (["run-dir", "{root}", "{user}", "../../etc"], "not a run directory's name"),
        (["run-dir", "{root}", "{user}", "x" * 32], "not a run directory's name"),
        (["remove-run", "{root}", "{user}"], "usage"),
        (["user-dir", "{root}", "{user}", "extra"], "usage"),
    ],
)
def test_anything_else_is_refused_and_audited(
    site: dict[str, Path], args: list[str], why: str
) -> None:
    argv = [a.format(root=site["root"], user=_someone()) for a in args]
    done = call(site, *argv)
    assert done.returncode == 2, done.stderr
    assert why in done.stderr, done.stderr
    assert list(site["root"].iterdir()) == []  # nothing made
    (entry,) = audited(site)
    assert entry["argv"] == argv
    assert entry["done"] is False
    assert why in str(entry["error"])


def test_a_planted_link_or_someone_elses_directory_is_refused(
    site: dict[str, Path], tmp_path: Path
) -> None:
    user, root, name = _someone(), site["root"], "cd" * 16
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep").write_text("root's")
    (root / user).symlink_to(target)  # the user's directory is a link to elsewhere
    for verb in ("user-dir", "run-dir", "remove-run"):
        done = call(site, verb, str(root), user, *([name] if verb != "user-dir" else []))
        assert done.returncode == 2, done.stderr
        assert "not a directory" in done.stderr, done.stderr
    (root / user).unlink()
    (root / user).mkdir()  # root's, not the user's
    done = call(site, "run-dir", str(root), user, name)
    assert done.returncode == 2
    assert "belongs to someone else" in done.stderr
    os.chown(root / user, pwd.getpwnam(user).pw_uid, -1)
    (root / user).chmod(0o700)
    (root / user / name).symlink_to(target)  # the run is a link: never removed through it
    done = call(site, "remove-run", str(root), user, name)
    assert done.returncode == 2
    assert "not a directory" in done.stderr
    assert (target / "keep").read_text() == "root's"


def test_a_configuration_others_may_write_is_refused(site: dict[str, Path]) -> None:
    site["conf"].chmod(0o666)
    done = call(site, "user-dir", str(site["root"]), _someone())
    assert done.returncode == 2
    assert "only root may write" in done.stderr
    assert list(site["root"].iterdir()) == []


def test_only_the_configured_caller_may_use_it(site: dict[str, Path]) -> None:
    env = {**os.environ, "SUDO_UID": str(pwd.getpwnam(_someone()).pw_uid)}
    done = call(site, "user-dir", str(site["root"]), _someone(), env=env)
    assert done.returncode == 2
    assert "may call aipool-helper" in done.stderr


@pytest.fixture
def agent_site(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """The helper with the as-the-user agent, and a directory of the user's under its root."""
    root = tmp_path / "users"
    root.mkdir(mode=0o711)
    with helpersite.installed(tmp_path, [root], _group()) as site:
        user = pwd.getpwnam(_someone())
        home = site.reachable / "ws"
        home.mkdir(mode=0o700)
        os.chown(home, user.pw_uid, user.pw_gid)
        yield {
            "script": site.script, "conf": site.conf, "audit": site.audit,
            "reachable": site.reachable, "ws": home,
        }  # fmt: skip


def test_as_user_runs_the_agent_as_that_user_and_passes_streams_through(
    agent_site: dict[str, Path],
) -> None:
    user, ws = _someone(), agent_site["ws"]
    entry = pwd.getpwnam(user)
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("config.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    script = [sys.executable, "-I", str(agent_site["script"]), "as-user", user]
    done = subprocess.run(
        [*script, "unpack", str(ws / "model")], input=stream.getvalue(), capture_output=True,
        check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = (ws / "model" / "config.json").stat()
    assert (made.st_uid, made.st_gid) == (entry.pw_uid, entry.pw_gid)  # made by the user
    packed = subprocess.run(
        [*script, "pack", str(ws)], capture_output=True, check=False, timeout=60
    )
    assert packed.returncode == 0, packed.stderr
    with tarfile.open(fileobj=io.BytesIO(packed.stdout), mode="r|") as tar:
        assert [m.name for m in tar] == ["model", "model/config.json"]
    # root's own file in the user's tree: the user may not read it, so neither may the agent
    secret = ws / "root-only"
    secret.write_text("root's")
    secret.chmod(0o600)
    refused = subprocess.run([*script, "pack", str(ws)], capture_output=True, check=False)
    assert refused.returncode == 2
    assert json.loads(refused.stderr.decode().splitlines()[-1])["error"] == "unreadable"
    assert b"root's" not in refused.stdout
    assert [a["argv"][:3] for a in audited(agent_site)] == [["as-user", user, "unpack"]] + [
        ["as-user", user, "pack"]
    ] * 2


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["as-user", "root", "pack", "{ws}"], "system account"),
        (["as-user", "daemon", "pack", "{ws}"], "system account"),
        (["as-user", "nobody", "pack", "{ws}"], "system account"),  # uid 65534 > max_uid
        (["as-user", "{user}", "chmod", "{ws}"], "usage"),
        (["as-user", "{user}", "pack", "/etc"], "not under a root the agent serves"),
        (["as-user", "{user}", "pack", "{ws}/../../etc"], "not an absolute, normalised path"),
        (["as-user", "{user}", "pack", "ws"], "not an absolute, normalised path"),
        (["as-user", "{user}", "pack", "{reachable}"], "not under a root the agent serves"),
        (["as-user", "{user}", "pack"], "usage"),
    ],
)
def test_as_user_refuses_other_users_tasks_and_places(
    agent_site: dict[str, Path], args: list[str], why: str
) -> None:
    argv = [
        a.format(user=_someone(), ws=agent_site["ws"], reachable=agent_site["reachable"])
        for a in args
    ]
    done = call(agent_site, *argv)
    assert done.returncode == 2, done.stderr
    assert why in done.stderr, done.stderr
    assert audited(agent_site)[-1]["done"] is False
