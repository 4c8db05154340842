"""``backup restore``: verify the whole archive first (into a private staging directory),
check that the site may take it, and only then change anything."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aipool.backup import archive, dump
from aipool.backup.create import sha256_of
from aipool.backup.manifest import CONFIG_PREFIX, FILES_PREFIX, Manifest, Reference, error
from aipool.backup.site import Site
from translations import N_, Message

_ENGINES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


@dataclass(frozen=True, slots=True)
class Options:
    force: bool = False  # over a portal database that has tables; from another cluster
    config_in_place: bool = False  # the configuration back where it was taken from
    config_to: Path | None = None  # else into this staging directory


def restore(path: Path, site: Site, options: Options) -> list[Message]:
    """Restore what the archive holds; returns what was done, one sentence each."""
    with tempfile.TemporaryDirectory(prefix="aipool-restore-") as tmp:
        staging = Path(tmp)
        verified = archive.verify(path, extract_to=staging)
        manifest = verified.manifest
        _preflight(manifest, site, options)
        done: list[Message] = [
            Message.of(
                N_("Verified %(path)s: %(count)s members, taken %(at)s on %(cluster)s."),
                path=path,
                count=len(manifest.members),
                at=manifest.created_at,
                cluster=manifest.cluster,
            )
        ]
        done += _portal_db(manifest, site, staging)
        done += _slurmdbd(manifest, site, staging)
        done += _config(manifest, site, options, staging, verified.modes)
        done += _files(manifest, site, staging, verified.modes)
        return done


def _preflight(manifest: Manifest, site: Site, options: Options) -> None:
    """Every refusal before the first change."""
    if manifest.cluster != site.cluster and not options.force:
        raise error(
            N_(
                "The archive was taken on cluster %(theirs)s, not %(ours)s; "
                "use --force to restore it here."
            ),
            theirs=manifest.cluster,
            ours=site.cluster,
        )
    if "portal_db" in manifest.parts and site.database_url:
        kind = "sqlite" if dump.is_sqlite(site.database_url) else "postgresql"
        if manifest.parts["portal_db"]["kind"] != kind:
            raise error(
                N_("The archive's database is %(theirs)s; this site runs %(ours)s."),
                theirs=_ENGINES.get(manifest.parts["portal_db"]["kind"], "?"),
                ours=_ENGINES[kind],
            )
        if site.portal_running():
            raise error(N_("The portal is running: stop it before restoring its database."))
        if dump.database_has_tables(site.database_url) and not options.force:
            raise error(
                N_(
                    "The portal's database is not empty; use --force to replace it "
                    "with the archive's."
                )
            )
    if "slurmdbd" in manifest.parts and site.slurmdbd_conf:
        dump.DbdStorage.read(site.slurmdbd_conf)
        if site.dbd is None:
            raise error(N_("There is no way to stop and start slurmdbd on this site."))
    staging = None if options.config_in_place else options.config_to
    if staging is not None and staging.exists() and any(staging.iterdir()):
        raise error(N_("The staging directory %(path)s is not empty."), path=staging)
    if manifest.parts.get("files", {}).get("included"):
        for label in manifest.parts["files"]["stores"]:
            if site.store(label) is None:
                raise error(N_("This site has no store for %(label)s."), label=label)


def _portal_db(manifest: Manifest, site: Site, staging: Path) -> list[Message]:
    part = manifest.parts.get("portal_db")
    if not part:
        return []
    if not site.database_url:
        return [Message.of(N_("Left the portal's database out: this site names none."))]
    copy = staging / part["member"]
    if part["kind"] == "sqlite":  # the site's kind: checked before the first change
        target = dump.sqlite_path(site.database_url)
        _make_dirs(target.parent, site.owner)
        dump.sqlite_restore(copy, target, site.owner)
    else:
        dump.pg_restore(site.database_url, copy)
    for member, target in site.data_keys:
        source = staging / CONFIG_PREFIX / member
        if source.is_file():
            _install(source, target, 0o600, owner=None)
    return [Message.of(N_("Restored the portal's database (%(kind)s)."), kind=part["kind"])]


def _slurmdbd(manifest: Manifest, site: Site, staging: Path) -> list[Message]:
    part = manifest.parts.get("slurmdbd")
    if not part:
        return []
    if not site.slurmdbd_conf or site.dbd is None:
        return [Message.of(N_("Left slurmdbd's database out, as asked."))]
    storage = dump.DbdStorage.read(site.slurmdbd_conf)
    site.dbd.stop()
    try:
        dump.mariadb_load(storage, staging / part["member"])
    finally:
        site.dbd.start()  # back in service with whatever the database now holds
    return [
        Message.of(
            N_("Restored slurmdbd's database %(database)s; slurmdbd was restarted."),
            database=storage.database,
        )
    ]


def _config(
    manifest: Manifest, site: Site, options: Options, staging: Path, modes: dict[str, int]
) -> list[Message]:
    dirs: dict[str, str] = manifest.parts.get("config", {})
    names = [m.name for m in manifest.members if m.name.startswith(CONFIG_PREFIX)]
    if not names:
        return []
    if options.config_in_place:
        for name in names:
            label, _, rel = name.removeprefix(CONFIG_PREFIX).partition("/")
            _install(staging / name, Path(dirs[label]) / rel, modes[name], owner=None)
        where = ", ".join(dirs.values())
        return [Message.of(N_("Restored the configuration in place: %(where)s."), where=where)]
    if options.config_to is None:
        return []
    for name in names:
        target = options.config_to / name.removeprefix(CONFIG_PREFIX)
        _install(staging / name, target, modes[name] & 0o700, owner=None)
    return [
        Message.of(N_("Wrote the configuration to %(path)s for review."), path=options.config_to)
    ]


def _files(manifest: Manifest, site: Site, staging: Path, modes: dict[str, int]) -> list[Message]:
    part = manifest.parts.get("files", {})
    if part.get("included"):
        names = [m.name for m in manifest.members if m.name.startswith(FILES_PREFIX)]
        for name in names:
            label, _, rel = name.removeprefix(FILES_PREFIX).partition("/")
            store = site.store(label) or Path("/nonexistent")  # each was checked in _preflight
            _install(staging / name, store / rel, modes[name], owner=site.owner)
        return [Message.of(N_("Restored %(count)s files of the stores."), count=len(names))]
    refs = manifest.references
    if not refs:
        return []
    missing = sum(not _in_place(site.store(ref.store), ref) for ref in refs)
    return [
        Message.of(
            N_(
                "The archive names %(count)s files by reference: %(ok)s are in place and "
                "match, %(missing)s are missing or changed."
            ),
            count=len(refs),
            ok=len(refs) - missing,
            missing=missing,
        )
    ]


def _in_place(store: Path | None, ref: Reference) -> bool:
    path = store / ref.path if store else None
    if path is None or not path.is_file() or path.stat().st_size != ref.size:
        return False
    return sha256_of(path) == ref.sha256


def _install(source: Path, target: Path, mode: int, owner: str | None) -> None:
    """One file into place: written beside its target, then renamed over it."""
    _make_dirs(target.parent, owner)
    tmp = target.with_name(f".{target.name}.restoring")
    shutil.copyfile(source, tmp)
    tmp.chmod(mode & 0o7777)
    if owner:
        shutil.chown(tmp, owner, owner)
    tmp.replace(target)


def _make_dirs(path: Path, owner: str | None) -> None:
    """``path`` and its missing parents, each made the owner's as it is made (a store's
    directories are the service user's, not root's)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for d in reversed(missing):
        d.mkdir(mode=0o750)
        if owner:
            shutil.chown(d, owner, owner)
