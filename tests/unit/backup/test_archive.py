"""The archive format: create → verify; every kind of damage (a flipped byte, a missing
member, a changed manifest, a truncated file, a foreign archive) is refused by verify and by
restore with a sentence that names it, and the refused restore changes nothing."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import os
import sqlite3
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from aipool.backup import archive, create, restore
from aipool.backup.manifest import CHECKSUM, MANIFEST, BackupError, Manifest
from aipool.backup.site import Site

NOW = dt.datetime(2026, 5, 4, 3, 2, 1, tzinfo=dt.UTC)


def _db(path: Path, rows: int) -> None:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")  # the portal's mode: a copy must still be whole
    con.execute("CREATE TABLE usage (id INTEGER PRIMARY KEY, account TEXT, hours REAL)")
    con.executemany(
        "INSERT INTO usage (account, hours) VALUES (?, ?)",
        [(f"proj{i % 7}", i / 4) for i in range(rows)],
    )
    con.commit()
    con.close()


@pytest.fixture
def source(tmp_path: Path) -> Site:
    """A small site: a database with rows, a configuration directory, two stores."""
    root = tmp_path / "source"
    (root / "etc" / "admission").mkdir(parents=True)
    (root / "etc" / "slurm.conf").write_text("ClusterName=aipool\n")
    (root / "etc" / "admission" / "table.lua").write_text("return {}\n")
    (root / "etc" / "portal_secret").write_text("s3cret\n")
    (root / "models" / "1" / "1").mkdir(parents=True)
    (root / "models" / "1" / "1" / "weights.bin").write_bytes(bytes(range(256)) * 40)
    (root / "models" / ".incoming").mkdir()
    (root / "models" / ".incoming" / "half").write_text("half-made")
    (root / "datasets" / "3" / "v1").mkdir(parents=True)
    (root / "datasets" / "3" / "v1" / "a.csv").write_text("x,y\n1,2\n")
    _db(root / "portal.db", 500)
    return _site(root)


def _site(root: Path, **kw: object) -> Site:
    site = Site(
        cluster="aipool",
        database_url=f"sqlite:///{root / 'portal.db'}",
        slurmdbd_conf=None,
        config_dirs=(("etc", root / "etc"),),
        stores=(("models", root / "models"), ("datasets", root / "datasets")),
        data_keys=(("etc/portal_secret", root / "etc" / "portal_secret"),),
    )
    return replace(site, **kw)  # type: ignore[arg-type]


def _create(site: Site, to: Path, *, include_files: bool = True) -> Path:
    path, _ = create.create(
        site,
        to,
        include_files=include_files,
        now=NOW,
        aipool_version="0.1.0",
        slurm_version="22.05.8",
    )
    return path


@pytest.fixture
def made(source: Site, tmp_path: Path) -> Path:
    return _create(source, tmp_path / "backups")


@pytest.fixture
def target(tmp_path: Path) -> Site:
    """An empty site to restore onto."""
    root = tmp_path / "target"
    root.mkdir()
    return _site(root)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_create_then_verify_lists_every_member_with_its_checksum(made: Path, source: Site) -> None:
    assert made.name == "aipool-backup-aipool-20260504T030201Z.tar.gz"
    assert made.stat().st_mode & 0o777 == 0o600
    assert not list(made.parent.glob(".*")), "no temporary file or staging directory is left"
    verified = archive.verify(made)
    m = verified.manifest
    assert verified.whole_file_checked
    assert (m.format, m.version, m.cluster) == ("aipool-backup", 1, "aipool")
    assert (m.created_at, m.aipool_version, m.slurm_version) == (
        "2026-05-04T03:02:01+00:00",
        "0.1.0",
        "22.05.8",
    )
    names = {x.name for x in m.members}
    assert names == {
        "db/portal.sqlite",
        "config/etc/slurm.conf",
        "config/etc/admission/table.lua",
        "config/etc/portal_secret",
        "files/models/1/1/weights.bin",
        "files/datasets/3/v1/a.csv",
    }, "a store's hidden half-made directory stays out"
    weights = m.member("files/models/1/1/weights.bin")
    raw = bytes(range(256)) * 40
    assert weights is not None
    assert (weights.size, weights.sha256) == (len(raw), hashlib.sha256(raw).hexdigest())
    assert m.parts["portal_db"]["kind"] == "sqlite"
    assert m.parts["files"]["included"] is True
    side = archive.sidecar(made).read_text().split()
    assert side == [hashlib.sha256(made.read_bytes()).hexdigest(), made.name]


def test_files_by_reference_carry_path_size_and_checksum(source: Site, tmp_path: Path) -> None:
    path = _create(source, tmp_path / "refs", include_files=False)
    m = archive.verify(path).manifest
    assert not [x for x in m.members if x.name.startswith("files/")]
    refs = {(r.store, r.path): r for r in m.references}
    assert set(refs) == {("models", "1/1/weights.bin"), ("datasets", "3/v1/a.csv")}
    csv = refs[("datasets", "3/v1/a.csv")]
    assert (csv.size, csv.sha256) == (8, hashlib.sha256(b"x,y\n1,2\n").hexdigest())
    assert m.parts["files"]["included"] is False


def test_configuration_the_user_cannot_read_is_named_not_fatal(
    source: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service user's backup cannot read root's secrets: they are left out and named
    (the tests run as root, who reads everything, so the access check answers as a user's)."""
    secret = source.config_dirs[0][1] / "portal_secret"
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != secret and real(p, mode))
    path = _create(source, tmp_path / "user")
    m = archive.verify(path).manifest
    assert m.member("config/etc/portal_secret") is None
    assert m.member("config/etc/slurm.conf") is not None
    assert m.parts["config_unreadable"] == ["etc/portal_secret"]


def test_restore_brings_back_database_files_and_secret(
    made: Path, target: Site, tmp_path: Path
) -> None:
    staging = tmp_path / "staged-config"
    done = restore.restore(made, target, restore.Options(config_to=staging))
    texts = [str(d) for d in done]
    assert texts[0].startswith(f"Verified {made}: 6 members")
    assert "Restored the portal's database (sqlite)." in texts
    assert "Restored 2 files of the stores." in texts
    root = tmp_path / "target"
    con = sqlite3.connect(root / "portal.db")
    assert con.execute("SELECT count(*), sum(hours) FROM usage").fetchone() == (
        500,
        sum(i / 4 for i in range(500)),
    )
    con.close()
    assert (root / "models" / "1" / "1" / "weights.bin").read_bytes() == bytes(range(256)) * 40
    assert (root / "datasets" / "3" / "v1" / "a.csv").read_text() == "x,y\n1,2\n"
    assert (root / "etc" / "portal_secret").read_text() == "s3cret\n"
    assert (staging / "etc" / "slurm.conf").read_text() == "ClusterName=aipool\n"
    assert not (root / "etc" / "slurm.conf").exists(), "configuration goes to staging, not in place"


def test_restore_over_a_database_with_data_needs_force(
    made: Path, target: Site, tmp_path: Path
) -> None:
    root = tmp_path / "target"
    _db(root / "portal.db", 3)
    before = _tree(root)
    with pytest.raises(BackupError, match="not empty; use --force"):
        restore.restore(made, target, restore.Options())
    assert _tree(root) == before
    restore.restore(made, target, restore.Options(force=True))
    con = sqlite3.connect(root / "portal.db")
    assert con.execute("SELECT count(*) FROM usage").fetchone() == (500,)
    con.close()


def test_restore_refuses_while_the_portal_runs(made: Path, tmp_path: Path) -> None:
    root = tmp_path / "target"
    root.mkdir()
    with pytest.raises(BackupError, match="portal is running"):
        restore.restore(made, _site(root, portal_running=lambda: True), restore.Options())
    assert _tree(root) == {}


def test_restore_refuses_another_clusters_archive(made: Path, tmp_path: Path) -> None:
    root = tmp_path / "target"
    root.mkdir()
    with pytest.raises(BackupError, match="taken on cluster aipool, not other"):
        restore.restore(made, _site(root, cluster="other"), restore.Options())
    assert _tree(root) == {}


# ------------------------------------------------------------------ damage of every kind
def _members(path: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(path, "r:gz") as tar:
        out = []
        for info in tar.getmembers():
            f = tar.extractfile(info)
            assert f is not None
            out.append((info, f.read()))
        return out


def _repack(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for old, data in members:
            info = tarfile.TarInfo(old.name)
            info.size, info.mode = len(data), old.mode
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    archive.sidecar(path).unlink()  # the member checks, not the whole file's, must find it


def _flip_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    path.write_bytes(bytes(raw))


def _flip_member_byte(path: Path) -> None:
    members = _members(path)
    members = [
        (i, d[:100] + bytes([d[100] ^ 1]) + d[101:] if i.name == "db/portal.sqlite" else d)
        for i, d in members
    ]
    _repack(path, members)


def _drop_member(path: Path) -> None:
    _repack(path, [(i, d) for i, d in _members(path) if i.name != "config/etc/slurm.conf"])


def _change_manifest(path: Path) -> None:
    members = []
    for info, data in _members(path):
        if info.name == MANIFEST:
            doc = json.loads(data)
            doc["cluster"] = "elsewhere"
            members.append((info, json.dumps(doc).encode()))
        else:
            members.append((info, data))
    _repack(path, members)


def _truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) * 2 // 3])


def _foreign(path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("README")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    path.write_bytes(buf.getvalue())
    archive.sidecar(path).unlink()


def _not_gzip(path: Path) -> None:
    path.write_bytes(b"this is not an archive at all\n" * 10)
    archive.sidecar(path).unlink()


def _sidecar_mismatch(path: Path) -> None:
    archive.sidecar(path).write_text("0" * 64 + f"  {path.name}\n")


def _escape(path: Path) -> None:
    members = _members(path)
    info = tarfile.TarInfo("../outside")
    _repack(path, [(info, b"x"), *members])


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "flipped byte": (_flip_byte, "damaged or truncated"),
    "flipped byte in a member": (_flip_member_byte, "db/portal.sqlite does not match its checksum"),
    "missing member": (_drop_member, "lacks its member config/etc/slurm.conf"),
    "changed manifest": (_change_manifest, "manifest does not match the archive's checksum"),
    "truncated": (_truncate, "damaged or truncated"),
    "foreign": (_foreign, "not an AIPool backup archive"),
    "not gzip": (_not_gzip, "damaged or truncated"),
    "sidecar": (_sidecar_mismatch, "does not match the checksum beside it"),
    "path escape": (_escape, "unexpected entry ../outside"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damage_is_refused_by_verify_and_restore_changing_nothing(
    kind: str, made: Path, tmp_path: Path
) -> None:
    damage, message = DAMAGE[kind]
    damage(made)
    with pytest.raises(BackupError, match=message):
        archive.verify(made)
    root = tmp_path / "target"
    root.mkdir()
    _db(root / "portal.db", 3)
    (root / "models").mkdir()
    (root / "models" / "kept.bin").write_bytes(b"mine")
    before = _tree(root)
    staging = tmp_path / "staged"
    with pytest.raises(BackupError, match=message):
        restore.restore(made, _site(root), restore.Options(force=True, config_to=staging))
    assert _tree(root) == before, "a refused restore changes nothing"
    assert not staging.exists()
    assert not (tmp_path / "outside").exists()


def test_manifest_of_another_version_is_refused() -> None:
    raw = json.dumps({"format": "aipool-backup", "version": 99}).encode()
    with pytest.raises(BackupError, match="format version 99"):
        Manifest.from_json(raw)
    with pytest.raises(BackupError, match="unreadable"):
        Manifest.from_json(json.dumps({"format": "aipool-backup", "version": 1}).encode())


def test_a_failed_write_leaves_nothing_behind(source: Site, tmp_path: Path) -> None:
    to = tmp_path / "out"
    to.mkdir()

    def entries() -> Iterator[archive.Entry]:
        yield archive.Entry("db/x", tmp_path / "source" / "portal.db")
        raise OSError("disk full")

    empty = Manifest("", "", "", "", {}, ())
    with pytest.raises(OSError, match="disk full"):
        archive.write(to / "a.tar.gz", entries(), empty)
    assert list(to.iterdir()) == []


def test_gzip_of_the_archive_is_readable_by_standard_tools(made: Path) -> None:
    with gzip.open(made) as f:
        assert f.read(512)  # plain tar.gz: `tar tzf` lists it
    names = [i.name for i, _ in _members(made)]
    assert names[-2:] == [MANIFEST, CHECKSUM]


def test_config_in_place_and_parts_left_out(made: Path, tmp_path: Path) -> None:
    """``--config`` writes the configuration back where it was taken from; a site that names
    no database leaves that part out and says so."""
    etc = tmp_path / "source" / "etc"
    (etc / "slurm.conf").write_text("ClusterName=changed\n")
    (etc / "admission" / "table.lua").unlink()
    bare = _site(tmp_path / "bare", database_url=None)
    done = [str(d) for d in restore.restore(made, bare, restore.Options(config_in_place=True))]
    assert "Left the portal's database out: this site names none." in done
    assert f"Restored the configuration in place: {etc}." in done
    assert (etc / "slurm.conf").read_text() == "ClusterName=aipool\n"
    assert (etc / "admission" / "table.lua").read_text() == "return {}\n"
    assert (tmp_path / "bare" / "models" / "1" / "1" / "weights.bin").is_file()


def test_files_by_reference_are_counted_on_restore(source: Site, tmp_path: Path) -> None:
    path = _create(source, tmp_path / "refs", include_files=False)
    (tmp_path / "source" / "datasets" / "3" / "v1" / "a.csv").write_text("changed\n")
    done = [
        str(d) for d in restore.restore(path, replace(source, database_url=None), restore.Options())
    ]
    assert (
        "The archive names 2 files by reference: 1 are in place and match, "
        "1 are missing or changed." in done
    )
