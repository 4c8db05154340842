"""The archive on disk: written under a temporary name and renamed when complete, read back
in one streaming pass that checks every member, the manifest and the whole file.

Layout: the members (``db/…``, ``config/…``, ``files/…``) first, then ``manifest.json``
(each member's size and SHA-256), then ``manifest.sha256`` (the manifest's own checksum).
The manifest comes last so that create hashes each member while it writes it, reading every
file once; a sidecar ``<archive>.sha256`` (the format ``sha256sum -c`` reads) holds the whole
file's checksum.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import secrets
import tarfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any

from aipool.backup.manifest import CHECKSUM, MANIFEST, Manifest, Member, error
from translations import N_

SUFFIX = ".tar.gz"
# A database already compresses well at 3; the higher levels cost twice the time for a few
# per cent (bench/backup.py).
COMPRESSLEVEL = 3
CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Entry:
    """A file to put into the archive under ``name``."""

    name: str
    source: Path


@dataclass(frozen=True, slots=True)
class Verified:
    manifest: Manifest
    whole_file_checked: bool  # the sidecar's checksum was there and matched
    modes: dict[str, int]  # member name → its file mode in the archive


class _HashingReader:
    """A file object that hashes what is read through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.digest.update(data)
        self.size += len(data)
        return data


class _HashingWriter:
    """A file object that hashes what is written through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.digest = raw, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def sidecar(archive: Path) -> Path:
    return archive.with_name(archive.name + ".sha256")


def safe_name(name: str) -> bool:
    """A relative path without ``..``, empty or absolute parts: nothing may land outside."""
    path = PurePosixPath(name)
    return (
        bool(name)
        and not path.is_absolute()
        and "\\" not in name
        and all(p not in ("", ".", "..") for p in name.split("/"))
    )


def _write_atomically(target: Path, fill: Callable[[IO[bytes]], None]) -> None:
    """Write ``target`` (mode 0600) under a temporary name in its directory and rename it
    into place once complete, so that nothing half-written ever bears the name."""
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write(target: Path, entries: Iterable[Entry], manifest: Manifest) -> Manifest:
    """Write the archive; ``manifest``'s members are filled in from what was written."""
    written: list[Member] = []
    done: list[tuple[Manifest, str]] = []

    def fill(out: IO[bytes]) -> None:
        hashing = _HashingWriter(out)
        with tarfile.open(  # type: ignore[call-overload]  # a file object of our own
            fileobj=hashing,
            mode="w:gz",
            compresslevel=COMPRESSLEVEL,
            format=tarfile.PAX_FORMAT,
        ) as tar:
            for entry in entries:
                if not safe_name(entry.name):
                    raise ValueError(f"unsafe member name {entry.name!r}")
                info = tar.gettarinfo(str(entry.source), arcname=entry.name)
                if not info.isfile():
                    continue  # only regular files travel; links and devices do not
                with entry.source.open("rb") as src:
                    reader = _HashingReader(src)
                    tar.addfile(info, reader)
                written.append(Member(entry.name, reader.size, reader.digest.hexdigest()))
            final = replace(manifest, members=tuple(written))
            raw = final.to_json()
            _add_bytes(tar, MANIFEST, raw)
            _add_bytes(tar, CHECKSUM, (hashlib.sha256(raw).hexdigest() + "\n").encode())
        done.append((final, hashing.digest.hexdigest()))

    _write_atomically(target, fill)
    final, digest = done[0]
    line = f"{digest}  {target.name}\n".encode()

    def fill_sidecar(out: IO[bytes]) -> None:
        out.write(line)

    _write_atomically(sidecar(target), fill_sidecar)
    return final


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o600
    tar.addfile(info, io.BytesIO(data))


def verify(archive: Path, extract_to: Path | None = None) -> Verified:
    """Check the archive's structure, manifest and every checksum; with ``extract_to``, also
    write its members there (the caller applies them only if this returns)."""
    if not archive.is_file():
        raise error(N_("There is no archive at %(path)s."), path=archive)
    seen: dict[str, Member] = {}
    modes: dict[str, int] = {}
    raw_manifest: bytes | None = None
    checksum: bytes | None = None
    with archive.open("rb") as f:
        whole = _HashingReader(f)
        try:
            # gzip's own reader, not tarfile's: it checks the stream's CRC and length, so a
            # flipped byte that still inflates to something is caught
            gz = gzip.GzipFile(fileobj=whole, mode="rb")  # type: ignore[call-overload]
            with tarfile.open(fileobj=gz, mode="r|") as tar:
                for info in tar:
                    name = info.name
                    if not safe_name(name) or not info.isfile() or name in seen:
                        raise error(
                            N_("The archive holds an unexpected entry %(name)s; it is refused."),
                            name=name,
                        )
                    data = tar.extractfile(info)
                    if data is None:  # not reached: a regular file, checked above
                        raise tarfile.ReadError(name)
                    if name in (MANIFEST, CHECKSUM):
                        content = data.read()
                        if name == MANIFEST:
                            raw_manifest = content
                        else:
                            checksum = content
                        seen[name] = Member(name, len(content), "")
                        continue
                    seen[name] = _take(data, name, extract_to)
                    modes[name] = info.mode
            while gz.read(CHUNK):  # to gzip's trailer, which holds the checksum
                pass
            while whole.read(CHUNK):  # and any bytes after it
                pass
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise error(
                N_("The archive is damaged or truncated and cannot be read: %(why)s"), why=exc
            ) from None
    manifest = _check_manifest(raw_manifest, checksum)
    _compare(manifest, seen)
    return Verified(manifest, _check_whole(archive, whole.digest.hexdigest()), modes)


def _take(data: IO[bytes], name: str, extract_to: Path | None) -> Member:
    digest, size = hashlib.sha256(), 0
    out: Any = None
    if extract_to is not None:
        path = extract_to / name
        path.parent.mkdir(parents=True, exist_ok=True)
        out = path.open("xb")
    try:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if out is not None:
                out.write(chunk)
    finally:
        if out is not None:
            out.close()
    return Member(name, size, digest.hexdigest())


def _check_manifest(raw: bytes | None, checksum: bytes | None) -> Manifest:
    if raw is None:
        raise error(N_("This is not an AIPool backup archive: it has no manifest."))
    if checksum is None:
        raise error(N_("The archive has no checksum of its manifest; it is refused."))
    if checksum.decode(errors="replace").strip() != hashlib.sha256(raw).hexdigest():
        raise error(N_("The manifest does not match the archive's checksum: it was changed."))
    return Manifest.from_json(raw)


def _compare(manifest: Manifest, seen: dict[str, Member]) -> None:
    listed = {m.name: m for m in manifest.members}
    for name, member in listed.items():
        got = seen.get(name)
        if got is None:
            raise error(N_("The archive lacks its member %(name)s."), name=name)
        if (got.size, got.sha256) != (member.size, member.sha256):
            raise error(
                N_("The archive's member %(name)s does not match its checksum: it is damaged."),
                name=name,
            )
    extra = sorted(set(seen) - set(listed) - {MANIFEST, CHECKSUM})
    if extra:
        raise error(
            N_("The archive holds %(name)s, which its manifest does not list; it is refused."),
            name=extra[0],
        )


def _check_whole(archive: Path, digest: str) -> bool:
    """The sidecar's checksum, where it was kept beside the archive."""
    side = sidecar(archive)
    if not side.is_file():
        return False
    expected = side.read_text(errors="replace").split(maxsplit=1)
    if not expected or expected[0] != digest:
        raise error(N_("The archive does not match the checksum beside it (%(path)s)."), path=side)
    return True
