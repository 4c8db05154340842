"""Files of dataset versions: staged, checked, checksummed, made read-only, then moved in place.

Everything a new version receives is written into a staging directory first, counted against
the byte and file limits while it streams. Only a complete, checked staging directory is
renamed to the version's path; on any error the staging directory is removed, so nothing
half-written remains. Archive members and object keys become relative paths only after
:func:`safe_relpath` accepted them; links and device files are refused.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tarfile
import uuid
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from portal.datasets.words import size
from portal.errors import Conflict, QuotaExceeded, ValidationFailed
from portal.i18n import gettext, number

CHUNK = 1 << 20
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")


@dataclass(frozen=True)
class Limits:
    max_bytes: int  # what the version may add (the project's quota left)
    max_file_bytes: int
    max_files: int


@dataclass(frozen=True)
class Entry:
    path: str  # relative, POSIX
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    entries: tuple[Entry, ...]
    checksum: str

    @property
    def size_bytes(self) -> int:
        return sum(e.size for e in self.entries)

    def find(self, path: str) -> Entry | None:
        for e in self.entries:
            if e.path == path:
                return e
        return None


class Budget:
    """Counts the bytes and files written into one staging directory."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes = 0
        self.files = 0

    def new_file(self, name: str, declared: int | None = None) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise QuotaExceeded(
                gettext("A version holds at most %(n)s files.", n=number(self.limits.max_files))
            )
        if declared is not None:
            self._check_file(name, declared)
            self._check_total(self.bytes + declared)

    def add(self, name: str, file_bytes: int, n: int) -> None:
        self.bytes += n
        self._check_file(name, file_bytes)
        self._check_total(self.bytes)

    def _check_file(self, name: str, file_bytes: int) -> None:
        if file_bytes > self.limits.max_file_bytes:
            raise QuotaExceeded(
                gettext(
                    "%(name)s is larger than the %(limit)s a file may have.",
                    name=name,
                    limit=size(self.limits.max_file_bytes),
                )
            )

    def _check_total(self, total: int) -> None:
        if total > self.limits.max_bytes:
            raise QuotaExceeded(
                gettext(
                    "The version would exceed the project's dataset quota (%(left)s left).",
                    left=size(self.limits.max_bytes),
                )
            )


def safe_relpath(name: str, field: str = "files") -> str:
    """``name`` as a relative POSIX path inside the version, or a field error."""
    if not name or "\x00" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        message = gettext("%(name)r: an empty name or control characters.", name=name)
        raise ValidationFailed({field: [message]})
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are no UTF-8, as a file system may hold them
        message = gettext("%(name)r: a name that is not valid UTF-8.", name=name)
        raise ValidationFailed({field: [message]}) from None
    if "\\" in name:
        message = gettext("%(name)r: backslashes are not allowed in paths.", name=name)
        raise ValidationFailed({field: [message]})
    pure = PurePosixPath(name)
    if pure.is_absolute():
        message = gettext("%(name)r: absolute paths are not allowed.", name=name)
        raise ValidationFailed({field: [message]})
    parts = [p for p in pure.parts if p not in ("", ".")]
    if not parts or ".." in parts:
        message = gettext("%(name)r: paths with '..' are not allowed.", name=name)
        raise ValidationFailed({field: [message]})
    if len(name) > 1000:
        message = gettext("%(name)r…: a path longer than 1000 characters.", name=name[:40])
        raise ValidationFailed({field: [message]})
    return "/".join(parts)


def write_stream(
    src: IO[bytes], dest: Path, rel: str, budget: Budget, field: str = "files"
) -> None:
    """Copy ``src`` to ``dest/rel``, counting every chunk against the budget."""
    target = dest / rel
    said = gettext("%(path)s: a file and a directory of the same name.", path=rel)
    clash = ValidationFailed({field: [said]})
    if target.is_dir():
        raise clash
    if target.exists():
        raise ValidationFailed({field: [gettext("%(path)s: given twice.", path=rel)]})
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        out = target.open("xb")
    except (FileExistsError, NotADirectoryError):  # "x", then "x/y": x is not a directory
        raise clash from None
    written = 0
    with out:
        while chunk := src.read(CHUNK):
            written += len(chunk)
            budget.add(rel, written, len(chunk))
            out.write(chunk)


def is_archive(filename: str) -> bool:
    return filename.lower().endswith(ARCHIVE_SUFFIXES)


def extract_archive(src: IO[bytes], filename: str, dest: Path, budget: Budget) -> None:
    """Unpack a zip or tar archive member by member; corrupt archives are field errors."""
    try:
        if filename.lower().endswith(".zip"):
            _extract_zip(src, dest, budget)
        else:
            _extract_tar(src, dest, budget)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        if isinstance(exc, OSError) and not _is_format_error(exc):
            raise
        message = gettext(
            "%(name)s: not a readable archive (corrupt or truncated): %(reason)s",
            name=filename,
            reason=exc,
        )
        raise ValidationFailed({"files": [message]}) from None


def _is_format_error(exc: OSError) -> bool:
    # gzip, bz2 and lzma report bad data as OSError subclasses without an errno
    return exc.errno is None


def _extract_tar(src: IO[bytes], dest: Path, budget: Budget) -> None:
    with tarfile.open(fileobj=src, mode="r:*") as tar:
        extract_members(tar, dest, budget)


def extract_members(tar: tarfile.TarFile, dest: Path, budget: Budget, field: str = "files") -> None:
    """Write a tar stream's regular files into ``dest`` against the budget: an upload's, or
    what the as-the-user agent packed of a user's tree. Links, devices and unsafe names are
    refused at ``field``."""
    for member in tar:
        if member.isdir() and _is_top(member.name):
            continue  # "./", which tar -C dir . writes first
        rel = safe_relpath(member.name, field)
        if member.issym() or member.islnk():
            raise ValidationFailed({field: [no_links(member.name)]})
        if member.isdir():
            continue
        if not member.isfile():
            raise ValidationFailed({field: [only_files(member.name)]})
        budget.new_file(rel, member.size)
        stream = tar.extractfile(member)
        if stream is None:  # pragma: no cover - isfile() members always have data
            continue
        write_stream(stream, dest, rel, budget, field)


def no_links(name: str) -> str:
    return gettext("%(path)s: links are not allowed.", path=name)


def only_files(name: str) -> str:
    return gettext("%(path)s: only regular files and directories are allowed.", path=name)


def _is_top(name: str) -> bool:
    return all(p in ("", ".") for p in PurePosixPath(name).parts)


def _extract_zip(src: IO[bytes], dest: Path, budget: Budget) -> None:
    with zipfile.ZipFile(src) as archive:
        for info in archive.infolist():
            rel = safe_relpath(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise ValidationFailed({"files": [no_links(info.filename)]})
            if info.is_dir():
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                raise ValidationFailed({"files": [only_files(info.filename)]})
            budget.new_file(rel, info.file_size)
            with archive.open(info) as stream:
                write_stream(stream, dest, rel, budget)


def copy_tree(src: Path, dest: Path, budget: Budget) -> None:
    """Copy a directory of the portal's own (a temporary one it made): no links, no special
    files. A tree a user can write is never copied by path: see :func:`sources.copy_as`."""
    for root, dirs, files in os.walk(src, followlinks=False):
        base = Path(root)
        for name in sorted(dirs + files):
            path = base / name
            rel = path.relative_to(src).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise ValidationFailed({"path": [no_links(rel)]})
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise ValidationFailed({"path": [only_files(rel)]})
            budget.new_file(rel, info.st_size)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as stream:
                write_stream(stream, dest, safe_relpath(rel, "path"), budget)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def checksum_of(entries: list[Entry]) -> str:
    """One sha256 for a version: over its sorted ``path NUL sha256 LF`` lines."""
    digest = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.path):
        digest.update(f"{e.path}\0{e.sha256}\n".encode())
    return digest.hexdigest()


def files_under(directory: Path) -> list[str]:
    """The regular files under ``directory``, as sorted relative POSIX paths."""
    return [
        path.relative_to(directory).as_posix()
        for path in sorted(p for p in directory.rglob("*") if p.is_file())
    ]


def scan(directory: Path, base: tuple[Path, Manifest] | None = None) -> Manifest:
    """Every file's size and sha256; a file that is a link of the ``base`` version's same file
    (:func:`link_tree`) keeps the sha256 its manifest has, without reading it again."""
    known = {e.path: e for e in base[1].entries} if base else {}
    entries = []
    for rel in files_under(directory):
        path = directory / rel
        old = known.get(rel)
        if base is not None and old is not None and _same_file(path, base[0] / rel):
            entries.append(old)
        else:
            entries.append(Entry(rel, path.stat().st_size, sha256_file(path)))
    if not entries:
        raise ValidationFailed({"files": [gettext("A version needs at least one file.")]})
    return Manifest(tuple(entries), checksum_of(entries))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def link_tree(src: Path, manifest: Manifest, dest: Path, budget: Budget) -> int:
    """The files of a version (``src``, as its manifest lists them) into ``dest`` as hard
    links, except where ``dest`` already has that path (a new upload replaces the old file) or
    a file where the old one needs a directory; copies where links cannot be made (another file
    system). Versions are read-only, so a link shares nothing that can change. Counted against
    the budget like any file; the number of files carried over."""
    carried = 0
    for e in manifest.entries:
        target = dest / e.path
        above = PurePosixPath(e.path).parents
        if target.exists() or any((dest / p).is_file() for p in above if str(p) != "."):
            continue
        budget.new_file(e.path, e.size)
        budget.add(e.path, e.size, e.size)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src / e.path, target, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                raise
            shutil.copyfile(src / e.path, target, follow_symlinks=False)
        carried += 1
    return carried


class Store:
    """The storage root: ``<root>/<dataset id>/v<n>/`` plus ``v<n>.manifest.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def of(cls, config: Mapping[str, Any], instance_path: str) -> Store:
        """The store the app's configuration names: ``DATASET_STORAGE``, else the instance's
        ``datasets``."""
        return cls(Path(config["DATASET_STORAGE"] or os.path.join(instance_path, "datasets")))

    def staging(self) -> Path:
        self._private_root()
        staging = self.root / ".staging"
        staging.mkdir(mode=0o700, exist_ok=True)
        path = staging / uuid.uuid4().hex
        path.mkdir()
        return path

    def _private_root(self) -> None:
        """The store lists nothing (0711): each dataset's directory is its own gate, set to
        its readers by ``portal.datasets.unix``; staged uploads are the portal's alone."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.root.stat().st_uid == os.geteuid():
            self.root.chmod(0o711)

    def version_dir(self, dataset_id: int, version: int) -> Path:
        return self.root / str(dataset_id) / f"v{version}"

    def workspace(self, dataset_id: int) -> Path:
        return self.root / str(dataset_id) / "workspace"

    def commit(self, staging: Path, final: Path, manifest: Manifest) -> None:
        """Make the staged files read-only and move them to the version's path (``Conflict``
        when another request took it first)."""
        for path in staging.rglob("*"):
            path.chmod(0o555 if path.is_dir() else 0o444)
        # the top directory stays writable until it is in place: moving a directory to
        # another parent rewrites its ".." entry, which a portal that is not root may only do
        # in a directory it may write
        if not final.parent.exists():
            # the portal's alone until its readers are set, after the commit (datasets.unix)
            final.parent.mkdir(mode=0o700, parents=True)
        try:
            # atomic: of two requests making the same version number one wins, the other
            # finds a non-empty directory there (a version always holds a file)
            staging.rename(final)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise Conflict(
                    gettext(
                        "%(version)s is being made by another request. Try again.",
                        version=final.name,
                    )
                ) from None
            raise
        final.chmod(0o555)
        _manifest_path(final).write_text(json.dumps(_manifest_json(manifest)))

    def manifest(self, final: Path) -> Manifest:
        data = json.loads(_manifest_path(final).read_text())
        entries = tuple(Entry(e["path"], e["size"], e["sha256"]) for e in data["files"])
        return Manifest(entries, data["checksum"])

    def remove(self, path: Path) -> None:
        """Remove a staging or version directory (read-only ones too) and its manifest."""
        if path.exists():
            for sub in [path, *path.rglob("*")]:
                if sub.is_dir() and not sub.is_symlink():
                    sub.chmod(0o755)
            shutil.rmtree(path)
        _manifest_path(path).unlink(missing_ok=True)


def _manifest_path(final: Path) -> Path:
    return final.with_name(final.name + ".manifest.json")


def _manifest_json(manifest: Manifest) -> dict[str, Any]:
    return {
        "checksum": manifest.checksum,
        "files": [{"path": e.path, "size": e.size, "sha256": e.sha256} for e in manifest.entries],
    }


def write_archive(directory: Path, paths: Iterable[str], prefix: str, out: IO[bytes]) -> None:
    """A gzipped tar of ``directory``'s files at ``paths`` (relative), in that order, under
    ``prefix/``."""
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for rel in paths:
            tar.add(directory / rel, arcname=f"{prefix}/{rel}", recursive=False)


def iter_files(manifest: Manifest, under: str = "") -> Iterator[Entry]:
    prefix = under.rstrip("/") + "/" if under else ""
    return (e for e in manifest.entries if e.path.startswith(prefix))
