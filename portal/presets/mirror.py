"""The site's offline model mirror: ``MIRROR/<hub repository>``, filled from a hub or a local
directory, each repository with a manifest of what it holds.

Jobs never download (they run with ``HF_HUB_OFFLINE=1``); the site fills the mirror once with
``aipool models mirror fill PRESET… --from huggingface|modelscope|DIR`` and checks it with
``aipool models mirror list``. A fill transfers into a staging directory beside the target
(``MIRROR/<owner>/.<name>.partial``, kept between attempts so an interrupted download resumes),
checks every file against the hub's digest, and only then moves the whole repository into
place: a refused or interrupted fill leaves what the mirror held before.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from translations import N_, Message

#: the manifest each filled repository carries (what ``mirror list`` reads)
MANIFEST = ".aipool-mirror.json"
CHUNK = 1 << 20
Progress = Callable[[str], None]


class MirrorError(Exception):
    """A fill that cannot go on, with a sentence in the reader's language (``.message``)."""

    def __init__(self, message: Message, *, refused: bool = False) -> None:
        super().__init__(str(message))
        self.message = message
        #: a file was refused (its digest or size): what was downloaded is not kept
        self.refused = refused


@dataclass(frozen=True, slots=True)
class Remote:
    """One file as the hub lists it, with the digest it must have once downloaded."""

    path: str
    size: int | None
    algorithm: str  # "sha256" (LFS files, ModelScope), "git-sha1" (a git blob), "" (unknown)
    digest: str


@dataclass(frozen=True, slots=True)
class Entry:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Manifest:
    repo: str
    source: str  # "huggingface", "modelscope" or "directory"
    location: str  # the endpoint or the directory it came from
    revision: str
    commit: str
    fetched_at: str
    files: tuple[Entry, ...] = field(default_factory=tuple)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "files": [asdict(f) for f in self.files]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        files = tuple(
            Entry(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in data["files"]
        )
        keys = ("repo", "source", "location", "revision", "commit", "fetched_at")
        return cls(**{k: str(data[k]) for k in keys}, files=files)


class State(StrEnum):
    PRESENT = "present"  # every file of the manifest there, with its size
    PARTIAL = "partial"  # a directory without a (matching) manifest, or an unfinished fill
    ABSENT = "absent"


@dataclass(frozen=True, slots=True)
class Status:
    preset: str
    repo: str
    state: State
    files: int
    size: int
    source: str
    revision: str


def inside(path: str) -> bool:
    """A repository path that stays inside the repository's directory: relative, no ``..``, no
    hidden part (``.gitattributes``, ``.git/…`` are the hub's, not the model's)."""
    parts = path.split("/")
    return bool(path) and "\\" not in path and all(p and not p.startswith(".") for p in parts)


def selected(paths: Iterable[str], patterns: Sequence[str]) -> list[str]:
    """The paths matching any glob of the preset's ``files`` (all of them when it has none);
    a path that would leave the repository's directory is never one."""
    paths = sorted(p for p in paths if inside(p))
    if not patterns:
        return paths
    return [p for p in paths if any(fnmatch.fnmatchcase(p, pat) for pat in patterns)]


def digest(path: Path, algorithm: str) -> str:
    """``sha256`` of the file, or its git blob id (``git-sha1``: sha1 of ``blob <size>\\0`` and
    the bytes), which is what the hub lists for files kept outside LFS."""
    h = hashlib.sha1(usedforsecurity=False) if algorithm == "git-sha1" else hashlib.sha256()
    if algorithm == "git-sha1":
        h.update(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify(staging: Path, remote: Remote) -> Entry:
    """The downloaded file, checked against the hub's digest and size; refused otherwise."""
    path = staging / remote.path
    size = path.stat().st_size
    if remote.size is not None and size != remote.size:
        raise MirrorError(
            Message.of(
                N_("%(file)s has %(got)s bytes, the hub lists %(expected)s; it was not kept."),
                file=remote.path,
                got=size,
                expected=remote.size,
            ),
            refused=True,
        )
    if remote.algorithm:
        got = digest(path, remote.algorithm)
        if got != remote.digest.lower():
            raise MirrorError(
                Message.of(
                    N_(
                        "Checksum mismatch for %(file)s: the hub lists %(algorithm)s "
                        "%(expected)s, the download has %(got)s; the mirror was left as it was."
                    ),
                    file=remote.path,
                    algorithm=remote.algorithm,
                    expected=remote.digest,
                    got=got,
                ),
                refused=True,
            )
    sha256 = got if remote.algorithm == "sha256" else digest(path, "sha256")
    return Entry(remote.path, size, sha256)


def target(mirror: Path, repo: str) -> Path:
    """``MIRROR/<owner>/<name>``; a repository id that would leave the mirror is refused."""
    parts = repo.split("/")
    if not 1 <= len(parts) <= 2 or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        raise MirrorError(Message.of(N_("%(repo)s is not a hub repository id."), repo=repo))
    return mirror.joinpath(*parts)


def staging_dir(mirror: Path, repo: str) -> Path:
    final = target(mirror, repo)
    return final.with_name(f".{final.name}.partial")


def read_manifest(path: Path) -> Manifest | None:
    try:
        return Manifest.from_json(json.loads((path / MANIFEST).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def place(staging: Path, final: Path, manifest: Manifest) -> None:
    """Move a verified staging directory into place (readable by every job's user), replacing
    what was there only now that the new one is whole."""
    shutil.rmtree(staging / ".cache", ignore_errors=True)  # huggingface_hub's resume notes
    (staging / MANIFEST).write_text(json.dumps(manifest.to_json(), indent=2) + "\n")
    # the mirror is read by every job's user on the nodes; it holds public hub files only
    for root, dirs, files in os.walk(staging):
        os.chmod(root, 0o755)  # noqa: S103
        for name in files:
            os.chmod(Path(root) / name, 0o644)
        dirs[:] = [d for d in dirs if not Path(root, d).is_symlink()]
    old = final.with_name(f".{final.name}.old-{secrets.token_hex(4)}")
    if final.exists() or final.is_symlink():
        final.rename(old)
    staging.rename(final)
    if old.is_symlink():
        old.unlink()
    else:
        shutil.rmtree(old, ignore_errors=True)


def now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def from_directory(
    source: Path, repo: str, patterns: Sequence[str], staging: Path, progress: Progress
) -> Manifest:
    """Copy a local snapshot of the repository (files as the hub lays them out), recording each
    file's sha256."""
    if not source.is_dir():
        raise MirrorError(Message.of(N_("%(path)s is not a directory."), path=str(source)))
    found = [
        str(p.relative_to(source))
        for p in source.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(source).parts)
    ]
    wanted = selected(found, patterns)
    if not wanted:
        raise MirrorError(
            Message.of(
                N_("%(path)s has none of the files %(repo)s needs."), path=str(source), repo=repo
            )
        )
    entries = []
    for name in wanted:
        progress(f"{repo}: {name}")
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, staging / name)
        entries.append(
            Entry(name, (staging / name).stat().st_size, digest(staging / name, "sha256"))
        )
    return Manifest(repo, "directory", str(source), "", "", now(), tuple(entries))


def status(mirror: Path, presets: Iterable[tuple[str, str]]) -> list[Status]:
    """What the mirror holds for each ``(preset, repo)``."""
    out = []
    for preset, repo in presets:
        final = target(mirror, repo)
        manifest = read_manifest(final) if final.is_dir() else None
        if manifest is not None:
            whole = all(
                (final / f.path).is_file() and (final / f.path).stat().st_size == f.size
                for f in manifest.files
            )
            state = State.PRESENT if whole else State.PARTIAL
            out.append(
                Status(
                    preset,
                    repo,
                    state,
                    len(manifest.files),
                    manifest.size,
                    manifest.location if manifest.source == "directory" else manifest.source,
                    manifest.commit or manifest.revision,
                )
            )
            continue
        files = [p for p in final.rglob("*") if p.is_file()] if final.is_dir() else []
        state = State.PARTIAL if files or staging_dir(mirror, repo).exists() else State.ABSENT
        size = sum(p.stat().st_size for p in files)
        out.append(Status(preset, repo, state, len(files), size, "", ""))
    return out
