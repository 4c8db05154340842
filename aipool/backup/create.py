"""``backup create``: take every part into a staging directory, then write one archive."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import make_url

from aipool.backup import archive, dump
from aipool.backup.archive import Entry
from aipool.backup.manifest import (
    CONFIG_PREFIX,
    FILES_PREFIX,
    PORTAL_PGDUMP,
    PORTAL_SQLITE,
    SLURMDBD_SQL,
    Manifest,
    Reference,
    error,
)
from aipool.backup.site import Site
from translations import N_

PREFIX = "aipool-backup-"


def archive_name(cluster: str, now: dt.datetime) -> str:
    return f"{PREFIX}{cluster}-{now.astimezone(dt.UTC):%Y%m%dT%H%M%SZ}{archive.SUFFIX}"


def walk(root: Path) -> Iterator[tuple[str, Path]]:
    """Regular files under ``root`` (relative name, path), sorted; links are not followed
    and hidden directories (a store's half-made ``.incoming``) are left out."""
    if not root.is_dir():
        return
    for here, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(here) / name
            if path.is_file() and not path.is_symlink():
                yield path.relative_to(root).as_posix(), path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(archive.CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def create(
    site: Site,
    to: Path,
    *,
    include_files: bool,
    now: dt.datetime,
    aipool_version: str,
    slurm_version: str,
) -> tuple[Path, Manifest]:
    """Write one archive into ``to``; returns its path and manifest."""
    to.mkdir(parents=True, exist_ok=True)
    target = to / archive_name(site.cluster, now)
    if target.exists():
        raise error(N_("%(path)s exists already; nothing was written."), path=target)
    # staged next to the archive: the dumps may be as large as the databases
    with tempfile.TemporaryDirectory(prefix=".aipool-backup-", dir=to) as tmp:
        staging = Path(tmp)
        entries: list[Entry] = []
        parts: dict[str, Any] = {}
        if site.database_url:
            parts["portal_db"] = _portal_db(site.database_url, staging, entries)
        if site.slurmdbd_conf:
            storage = dump.DbdStorage.read(site.slurmdbd_conf)
            dump.mariadb_dump(storage, staging / "slurmdbd.sql")
            entries.append(Entry(SLURMDBD_SQL, staging / "slurmdbd.sql"))
            parts["slurmdbd"] = {"member": SLURMDBD_SQL, "database": storage.database}
        parts["config"] = {label: str(d) for label, d in site.config_dirs}
        unreadable: list[str] = []
        for label, d in site.config_dirs:
            for rel, p in walk(d):
                # the service user's backup cannot read root's secrets (slurmdbd.conf, the JWT
                # key): the manifest names them, the site keeps them by its own means
                if os.access(p, os.R_OK):
                    entries.append(Entry(f"{CONFIG_PREFIX}{label}/{rel}", p))
                else:
                    unreadable.append(f"{label}/{rel}")
        if unreadable:
            parts["config_unreadable"] = unreadable
        references: list[Reference] = []
        for label, d in site.stores:
            for rel, path in walk(d):
                if include_files:
                    entries.append(Entry(f"{FILES_PREFIX}{label}/{rel}", path))
                else:
                    size = path.stat().st_size
                    references.append(Reference(label, rel, size, sha256_of(path)))
        parts["files"] = {
            "included": include_files,
            "stores": {label: str(d) for label, d in site.stores},
        }
        manifest = Manifest(
            created_at=now.astimezone(dt.UTC).isoformat(timespec="seconds"),
            aipool_version=aipool_version,
            slurm_version=slurm_version,
            cluster=site.cluster,
            parts=parts,
            members=(),
            references=tuple(references),
        )
        return target, archive.write(target, entries, manifest)


def _portal_db(url: str, staging: Path, entries: list[Entry]) -> dict[str, Any]:
    shown = make_url(url).render_as_string(hide_password=True)
    if dump.is_sqlite(url):
        dump.sqlite_backup(dump.sqlite_path(url), staging / "portal.sqlite")
        entries.append(Entry(PORTAL_SQLITE, staging / "portal.sqlite"))
        return {"kind": "sqlite", "member": PORTAL_SQLITE, "source": shown}
    dump.pg_dump(url, staging / "portal.pgdump")
    entries.append(Entry(PORTAL_PGDUMP, staging / "portal.pgdump"))
    return {"kind": "postgresql", "member": PORTAL_PGDUMP, "source": shown}


def prunable(names: list[str], keep: int, keep_days: float | None, now: dt.datetime) -> list[str]:
    """Which of the archives named ``names`` (``archive_name``'s form) retention removes: all
    but the newest ``keep``, except those younger than ``keep_days`` when that is given. The
    newest archive is never removed."""
    dated = sorted(((_taken_at(n), n) for n in names), reverse=True)
    keep = max(keep, 1)
    out = []
    for rank, (at, name) in enumerate(dated):
        if rank < keep:
            continue
        if keep_days is not None and now - at < dt.timedelta(days=keep_days):
            continue
        out.append(name)
    return sorted(out)


def _taken_at(name: str) -> dt.datetime:
    stamp = name.removesuffix(archive.SUFFIX).rsplit("-", 1)[-1]
    return dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)


def prune(to: Path, keep: int, keep_days: float | None, now: dt.datetime) -> list[Path]:
    """Remove the archives (and their checksum files) that retention lets go."""
    names = [
        p.name for p in to.glob(f"{PREFIX}*{archive.SUFFIX}") if p.is_file() and _parses(p.name)
    ]
    removed = []
    for name in prunable(names, keep, keep_days, now):
        (to / name).unlink()
        archive.sidecar(to / name).unlink(missing_ok=True)
        removed.append(to / name)
    return removed


def _parses(name: str) -> bool:
    try:
        _taken_at(name)
    except ValueError:
        return False
    return True
