"""The as-the-user agent: what it packs is the tree as it is (links and pipes named as such,
never followed), what it unpacks is clean files and directories only, whole or not at all,
and what it removes never follows a link out of the tree."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from asuser import agent


def _tree(base: Path) -> Path:
    top = base / "ws"
    (top / "sub" / "deep").mkdir(parents=True)
    (top / "a.txt").write_text("alpha")
    (top / "sub" / "b.bin").write_bytes(b"\0\1\2" * 1000)
    (top / "sub" / "deep" / "c.txt").write_text("gamma")
    secret = base / "secret"
    secret.mkdir()
    (secret / "key").write_text("do not copy")
    (top / "link").symlink_to(secret / "key")
    (top / "dirlink").symlink_to(secret)
    os.mkfifo(top / "pipe")
    return top


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as tar:
        return {m.name: m for m in tar}


def test_pack_names_links_and_pipes_as_what_they_are_and_follows_none(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    out = io.BytesIO()
    assert agent.pack(str(top), out) == 8
    members = _members(out.getvalue())
    assert sorted(members) == [
        "a.txt", "dirlink", "link", "pipe", "sub", "sub/b.bin", "sub/deep", "sub/deep/c.txt",
    ]  # fmt: skip
    assert members["link"].issym()
    assert members["dirlink"].issym()
    assert members["pipe"].isfifo()
    assert members["sub/b.bin"].isfile()
    assert members["sub/b.bin"].size == 3000
    assert members["sub"].isdir()
    with tarfile.open(fileobj=io.BytesIO(out.getvalue()), mode="r|") as tar:
        contents = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    assert contents == {
        "a.txt": b"alpha", "sub/b.bin": b"\0\1\2" * 1000, "sub/deep/c.txt": b"gamma",
    }  # fmt: skip
    assert b"do not copy" not in out.getvalue()


@pytest.mark.parametrize("kind", ["missing", "link", "file"])
def test_pack_refuses_a_top_that_is_not_a_directory(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "top"
    if kind == "link":
        target.symlink_to(tmp_path)
    elif kind == "file":
        target.write_text("x")
    with pytest.raises(agent.Refusal) as caught:
        agent.pack(str(target), io.BytesIO())
    assert caught.value.kind == ("missing" if kind == "missing" else "not-directory")


def _tar(*members: tuple[str, bytes | None, bytes]) -> bytes:
    """A tar stream of (name, type, data) members: type None is a regular file."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind is None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = kind
                info.linkname = data.decode()
                tar.addfile(info)
    return out.getvalue()


def test_unpack_makes_a_new_tree_whole(tmp_path: Path) -> None:
    stream = _tar(("model/config.json", None, b"{}"), ("weights.npz", None, b"w" * 10))
    assert agent.unpack(str(tmp_path / "model"), io.BytesIO(stream)) == 2
    assert (tmp_path / "model" / "model" / "config.json").read_bytes() == b"{}"
    assert (tmp_path / "model" / "weights.npz").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no partial copy left


@pytest.mark.parametrize(
    ("member", "why"),
    [
        (("../escape", None, b"x"), "'..' in the path"),
        (("/etc/passwd", None, b"x"), "an absolute path"),
        (("a\nb", None, b"x"), "control characters"),
        (("link", tarfile.SYMTYPE, b"/etc/shadow"), "not a file or directory"),
        (("hard", tarfile.LNKTYPE, b"a.txt"), "not a file or directory"),
        (("dev", tarfile.CHRTYPE, b""), "not a file or directory"),
    ],
)
def test_unpack_refuses_anything_but_clean_files_and_leaves_nothing(
    tmp_path: Path, member: tuple[str, bytes | None, bytes], why: str
) -> None:
    stream = _tar(("a.txt", None, b"fine"), member)
    with pytest.raises(agent.Refusal) as caught:
        agent.unpack(str(tmp_path / "model"), io.BytesIO(stream))
    assert caught.value.kind == "bad-member"
    assert why in caught.value.detail
    assert list(tmp_path.iterdir()) == []


def test_unpack_refuses_a_target_that_exists_even_as_a_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "model").symlink_to(elsewhere)
    with pytest.raises(agent.Refusal) as caught:
        agent.unpack(str(tmp_path / "model"), io.BytesIO(_tar(("a", None, b"x"))))
    assert caught.value.kind == "exists"
    assert list(elsewhere.iterdir()) == []


def test_a_stream_cut_off_leaves_no_partial_copy(tmp_path: Path) -> None:
    stream = _tar(("big.bin", None, b"z" * 100_000))
    with pytest.raises(agent.Refusal):
        agent.unpack(str(tmp_path / "model"), io.BytesIO(stream[:40_000]))
    assert list(tmp_path.iterdir()) == []


def test_remove_never_follows_a_link_out_of_the_tree(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    assert agent.remove(str(top)) is True
    assert not top.exists()
    assert (tmp_path / "secret" / "key").read_text() == "do not copy"
    assert agent.remove(str(top)) is False


def _run(*args: str, data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "asuser.agent", *args],
        input=data, capture_output=True, check=False, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [["pack"], ["copy", "/tmp"], ["pack", "relative"], ["pack", "/tmp/../etc"], ["x", "y", "z"]],
)
def test_the_command_refuses_other_words_with_one_json_line(args: list[str]) -> None:
    done = _run(*args)
    assert done.returncode == agent.EXIT_REFUSED
    said = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert said["error"] == "usage"


def test_the_command_packs_and_unpacks_through_its_pipes(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    (top / "link").unlink()
    (top / "dirlink").unlink()
    (top / "pipe").unlink()
    packed = _run("pack", str(top))
    assert packed.returncode == 0, packed.stderr
    done = _run("unpack", str(tmp_path / "copy"), data=packed.stdout)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"3"
    assert (tmp_path / "copy" / "sub" / "deep" / "c.txt").read_text() == "gamma"
    assert _run("remove", str(tmp_path / "copy")).stdout.strip() == b"removed"
    missing = _run("pack", str(tmp_path / "copy"))
    assert json.loads(missing.stderr.decode().splitlines()[-1])["error"] == "missing"


def test_pack_deref_follows_links_inside_as_a_hubs_cache_has_and_refuses_one_out(
    tmp_path: Path,
) -> None:
    model = tmp_path / "model"
    (model / "blobs").mkdir(parents=True)
    (model / "blobs" / "abc").write_bytes(b"weights")
    (model / "snapshots" / "main").mkdir(parents=True)
    (model / "snapshots" / "main" / "model.bin").symlink_to("../../blobs/abc")
    (model / "loop").symlink_to(".")  # entered once, not forever
    out = io.BytesIO()
    agent.pack_deref(str(model), out)
    with tarfile.open(fileobj=io.BytesIO(out.getvalue()), mode="r|") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    assert files["snapshots/main/model.bin"] == b"weights"
    assert files["blobs/abc"] == b"weights"
    (model / "snapshots" / "main" / "stolen").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_text("not in the model")
    with pytest.raises(agent.Refusal) as caught:
        agent.pack_deref(str(model), io.BytesIO())
    assert caught.value.kind == "outside"
    assert caught.value.path == "snapshots/main/stolen"
