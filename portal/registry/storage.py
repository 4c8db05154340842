"""Artifacts on the storage path: safe intake of uploads and directory imports, checksums,
parameter counts, and encryption at rest with per-tenant keys.

Layout: ``<MODEL_STORAGE>/<model id>/<version number>/…``. New artifacts are assembled in
``<MODEL_STORAGE>/.incoming/<random>/`` and moved into place with one rename once the
database row exists, so a failed upload or import leaves nothing behind.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import secrets
import shutil
import stat
import struct
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

import numpy as np
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app
from werkzeug.utils import secure_filename

from portal import actas
from portal.datasets.words import size
from portal.errors import Conflict, ValidationFailed
from portal.i18n import gettext

CHUNK = 1024 * 1024
ENC = ".enc"
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


@dataclass
class Staged:
    """Files assembled under ``.incoming``: their manifest, size and parameter count."""

    path: Path
    files: list[dict[str, Any]] = field(default_factory=list)
    size: int = 0
    parameters: int | None = None
    sha256: str = ""

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def root() -> Path:
    configured = current_app.config["MODEL_STORAGE"]
    path = Path(configured) if configured else Path(current_app.instance_path) / "models"
    if not path.is_dir():
        # the portal's alone: jobs get copies in their own directories (runs.stage_model)
        path.mkdir(parents=True, mode=0o700)
    return path


def mirror() -> Path:
    configured = current_app.config["MODEL_MIRROR"]
    return Path(configured) if configured else Path(current_app.instance_path) / "mirror"


def _incoming() -> Path:
    path = root() / ".incoming" / secrets.token_hex(12)
    path.mkdir(parents=True, mode=0o700)
    return path


def version_dir(model_id: int, number: int) -> Path:
    return root() / str(model_id) / str(number)


# ---------------------------------------------------------------------- intake
def _bad(message: str) -> ValidationFailed:
    return ValidationFailed({"file": [message]})


def _safe_name(name: str) -> PurePosixPath:
    """A relative member path without ``..``, absolute parts or odd characters."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or not path.parts or ".." in path.parts:
        raise _bad(gettext("The archive member %(name)s points outside the archive.", name=name))
    if any(not p.isprintable() or p.startswith("-") for p in path.parts):
        raise _bad(gettext("The archive member %(name)s has an unusable name.", name=name))
    return path


def _extract_tar(archive: Path, dest: Path, limit: int) -> None:
    try:
        with tarfile.open(archive) as tar:
            # "." (an archive of a directory's contents, tar -C dir .) is the target itself
            members = [m for m in tar.getmembers() if m.name.rstrip("/") not in ("", ".")]
            total = 0
            for m in members:
                _safe_name(m.name)
                if not (m.isfile() or m.isdir()):
                    raise _bad(not_a_file(m.name))
                total += m.size
                if total > limit:
                    raise _bad(too_big_unpacked(limit))
            # member by member, not extractall(filter=...): that needs Python 3.11.4, and
            # Debian 12 has 3.11.2. Files get this process's umask, never the archive's owner
            for m in members:
                target = dest.joinpath(*_safe_name(m.name).parts)
                if m.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(m)
                if source is None:  # pragma: no cover - isfile() was checked above
                    raise _bad(not_a_file(m.name))
                with source, target.open("wb") as out:
                    shutil.copyfileobj(source, out)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise _bad(corrupt(exc)) from None


def not_a_file(name: str) -> str:
    return gettext(
        "The archive member %(name)s is a link or a device: only files are allowed.", name=name
    )


def too_big_unpacked(limit: int) -> str:
    return gettext("The archive unpacks to more than %(limit)s.", limit=size(limit))


def corrupt(reason: object) -> str:
    return gettext("The archive is corrupt: %(reason)s", reason=reason)


def _extract_zip(archive: Path, dest: Path, limit: int) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            total = 0
            for info in infos:
                _safe_name(info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise _bad(not_a_file(info.filename))
                total += info.file_size
                if total > limit:
                    raise _bad(too_big_unpacked(limit))
            if (broken := zf.testzip()) is not None:
                raise _bad(corrupt(gettext("%(name)s fails its CRC check.", name=broken)))
            zf.extractall(dest)  # noqa: S202 -- every member name was checked above
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise _bad(corrupt(exc)) from None


def _save(stream: IO[bytes], target: Path, limit: int) -> None:
    total = 0
    with target.open("wb") as out:
        while chunk := stream.read(CHUNK):
            total += len(chunk)
            if total > limit:
                raise _bad(gettext("The upload is larger than %(limit)s.", limit=size(limit)))
            out.write(chunk)
    if total == 0:
        raise _bad(gettext("The upload is empty."))


def stage_upload(stream: IO[bytes], filename: str) -> Staged:
    """An uploaded file or archive (tar, tar.gz, zip) staged under ``.incoming``."""
    limit = int(current_app.config["MODEL_UPLOAD_MAX_BYTES"])
    name = secure_filename(filename or "")
    if not name:
        raise _bad(gettext("The upload needs a file name."))
    staged = Staged(_incoming())
    try:
        files = staged.path / "files"
        files.mkdir()
        lower = name.lower()
        if lower.endswith(ARCHIVES):
            raw = staged.path / "upload"
            _save(stream, raw, limit)
            if lower.endswith(".zip"):
                _extract_zip(raw, files, limit)
            else:
                _extract_tar(raw, files, limit)
            raw.unlink()
        else:
            _save(stream, files / name, limit)
        _finish(staged)
    except BaseException:
        staged.discard()
        raise
    return staged


def stage_directory(source: Path) -> Staged:
    """A Hugging Face / ModelScope directory copied under ``.incoming`` (links inside the
    directory are followed only while they stay inside it, as a hub cache's snapshots do)."""
    staged = Staged(_incoming())
    try:
        files = staged.path / "files"
        files.mkdir()
        base = source.resolve()
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source)
            if any(p.startswith(".") for p in rel.parts):
                continue  # .git, .cache, .gitattributes
            real = path.resolve()
            if not real.is_relative_to(base) and not real.is_relative_to(mirror().resolve()):
                message = gettext("%(path)s links outside the model directory.", path=rel)
                raise ValidationFailed({"path": [message]})
            if real.is_file():
                (files / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(real, files / rel)
        _finish(staged)
    except BaseException:
        staged.discard()
        raise
    return staged


def stage_files(contents: dict[str, bytes]) -> Staged:
    """Small files written by the portal itself (a preset's configuration)."""
    staged = Staged(_incoming())
    try:
        files = staged.path / "files"
        files.mkdir()
        for name, data in contents.items():
            (files / _safe_name(name)).parent.mkdir(parents=True, exist_ok=True)
            (files / _safe_name(name)).write_bytes(data)
        _finish(staged)
    except BaseException:
        staged.discard()
        raise
    return staged


def stage_job_output(out: Path, owner: str) -> Staged:
    """What a training job of ``owner``'s wrote to its output directory (:func:`stage_as`)."""
    none = gettext("The job left no model files.")
    return stage_as(owner, out, deref=False, empty=none, missing=none)


def stage_as(owner: str, source: Path, *, deref: bool, empty: str, missing: str) -> Staged:
    """A directory read as ``owner`` by the as-the-user agent (``deref``: following the links
    that stay inside it, as a hub's cache has), checked member by member here: regular files
    only, safe names, at most ``MODEL_JOB_OUTPUT_MAX_BYTES``; hidden files are left out. A
    directory that holds no file is a ``Conflict`` saying ``empty``, one that is not there a
    ``Conflict`` saying ``missing``."""
    limit = int(current_app.config["MODEL_JOB_OUTPUT_MAX_BYTES"])
    staged = Staged(_incoming())
    try:
        files = staged.path / "files"
        files.mkdir()
        total = 0
        with actas.packed(owner, str(source), deref=deref) as tar:
            for member in tar:
                if member.name.rstrip("/") in ("", "."):
                    continue
                rel = _safe_name(member.name)
                if any(p.startswith(".") for p in rel.parts) or member.isdir():
                    continue  # .cache, .git: a library's notes, not the model
                if not member.isfile():
                    raise _bad(not_a_file(member.name))
                total += member.size
                if total > limit:
                    raise _bad(too_big_unpacked(limit))
                source_file = tar.extractfile(member)
                target = files.joinpath(*rel.parts)
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                except (FileExistsError, NotADirectoryError):  # "a" a file, then "a/b/c"
                    said = gettext(
                        "%(path)s: a file and a directory of the same name.", path=member.name
                    )
                    raise _bad(said) from None
                with source_file or io.BytesIO() as src, target.open("xb") as dst:
                    shutil.copyfileobj(src, dst)
        if not any(files.iterdir()):
            raise Conflict(empty)
        _finish(staged)
    except actas.AgentRefused as exc:
        staged.discard()
        if exc.kind in ("missing", "not-directory"):
            raise Conflict(missing) from None
        raise actas.as_field_error(exc, owner, "path") from None
    except (tarfile.TarError, FileExistsError) as exc:
        staged.discard()
        raise _bad(corrupt(exc)) from None
    except BaseException:
        staged.discard()
        raise
    return staged


def _finish(staged: Staged) -> None:
    files = staged.path / "files"
    manifest = list(manifest_of(files))
    if not manifest:
        raise _bad(gettext("There are no files in the upload."))
    staged.files = manifest
    staged.size = sum(f["size"] for f in manifest)
    staged.sha256 = manifest_hash(manifest)
    staged.parameters = count_parameters(files)


def manifest_of(files: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(files.rglob("*")):
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as f:
                while chunk := f.read(CHUNK):
                    digest.update(chunk)
            yield {
                "path": path.relative_to(files).as_posix(),
                "size": path.stat().st_size,
                "sha256": digest.hexdigest(),
            }


def manifest_hash(files: list[dict[str, Any]]) -> str:
    lines = "".join(f"{f['path']}\t{f['size']}\t{f['sha256']}\n" for f in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def count_parameters(files: Path) -> int | None:
    """Tensor elements in ``*.safetensors`` (header only) and ``*.npz`` weights; a file that
    claims a format and is not in it is a corrupt upload."""
    total, seen = 0, False
    for path in sorted(files.rglob("*.safetensors")):
        total += _safetensors_elements(path)
        seen = True
    for path in sorted(files.rglob("*.npz")):
        try:
            with np.load(path, allow_pickle=False) as npz:
                total += sum(int(npz[k].size) for k in npz.files)
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise _bad(corrupt_weights(path.name, exc)) from None
        seen = True
    return total if seen else None


def _safetensors_elements(path: Path) -> int:
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            if length > size - 8 or length > 100 * 1024**2:
                raise ValueError("header length beyond the file")
            header = json.loads(f.read(length))
        return sum(
            int(np.prod(t["shape"], dtype=np.int64))
            for k, t in header.items()
            if k != "__metadata__"
        )
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise _bad(corrupt_weights(path.name, exc)) from None


def corrupt_weights(name: str, reason: object) -> str:
    return gettext("The weights file %(name)s is corrupt: %(reason)s", name=name, reason=reason)


def place(staged: Staged, final: Path) -> None:
    """Move staged files into their version directory (one rename)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        raise Conflict(gettext("Files already exist at %(path)s.", path=final))
    os.replace(staged.path / "files", final)
    staged.discard()


def remove(path: Path) -> None:
    """A file or directory of the model store (nothing outside it)."""
    if not path.is_relative_to(root()) or path == root():
        return
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# ---------------------------------------------------------------------- encryption
def tenant_key(domain_id: int) -> Fernet:
    """The tenant's artifact key: HKDF-SHA256 of the portal's master key and the tenant."""
    master = current_app.config["MODEL_KEY"] or current_app.config["SECRET_KEY"]
    raw = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=b"aipool-model-artifacts",
        info=b"tenant:%d" % domain_id,
    ).derive(str(master).encode())
    return Fernet(base64.urlsafe_b64encode(raw))


def encrypt_dir(path: Path, key: Fernet) -> None:
    """Replace every file by its encrypted form (``name.enc``)."""
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ENC):
        target = file.with_name(file.name + ENC)
        tmp = target.with_name(target.name + ".part")
        tmp.write_bytes(key.encrypt(file.read_bytes()))
        os.replace(tmp, target)
        file.unlink()


def write_tar(path: Path, files: list[dict[str, Any]], key: Fernet | None, out: IO[bytes]) -> None:
    """A version's files as a tar stream on ``out`` (decrypted with ``key`` when encrypted),
    each checked against its sha256: what a job's copy receives (``portal.actas.unpack``)."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for entry in files:
            member = tarfile.TarInfo(entry["path"])
            member.mode = 0o644
            if key is not None:
                data = decrypted(path, key, entry)
                _check_sum(entry, hashlib.sha256(data).hexdigest())
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
                continue
            fd = os.open(path / entry["path"], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as src:
                member.size = os.fstat(fd).st_size
                hashing = _Hashing(src)
                tar.addfile(member, hashing)
                # a copy that differs is cut off: the receiver never completes it
                _check_sum(entry, hashing.digest.hexdigest())


class _Hashing:
    def __init__(self, src: IO[bytes]) -> None:
        self.src, self.digest = src, hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.src.read(n)
        self.digest.update(data)
        return data


def _check_sum(entry: dict[str, Any], found: str) -> None:
    if found != entry["sha256"]:
        message = gettext("The file %(path)s does not match its checksum.", path=entry["path"])
        raise Conflict(message)


def decrypted(path: Path, key: Fernet, entry: dict[str, Any]) -> bytes:
    source = path / (entry["path"] + ENC)
    try:
        return key.decrypt(source.read_bytes())
    except (InvalidToken, OSError) as exc:
        message = gettext(
            "The file %(path)s cannot be decrypted: %(reason)r", path=entry["path"], reason=exc
        )
        raise Conflict(message) from None


def verify(path: Path, files: list[dict[str, Any]]) -> list[str]:
    """Paths whose content no longer matches the manifest (plain versions)."""
    have = {f["path"]: f for f in manifest_of(path)}
    return [f["path"] for f in files if have.get(f["path"], {}).get("sha256") != f["sha256"]]
