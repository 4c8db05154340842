"""Where a new version's files come from: each builder checks its arguments at once and
returns a *fill*, which writes the files into a staging directory against a budget and
returns the version's origin (see :func:`portal.datasets.service.new_version`)."""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from portal import actas
from portal.datasets import s3
from portal.datasets.storage import (
    Budget,
    Manifest,
    extract_archive,
    extract_members,
    is_archive,
    link_tree,
    safe_relpath,
    write_stream,
)
from portal.errors import ValidationFailed
from portal.i18n import gettext

Fill = Callable[[Path, Budget], str]


def upload(
    files: list[tuple[str, IO[bytes]]], *, extract: bool = True, sha256: str | None = None
) -> Fill:
    """A fill from uploaded files; archives (zip, tar[.gz|.bz2|.xz]) are unpacked."""
    if not files:
        raise ValidationFailed({"files": [gettext("Choose at least one file to upload.")]})
    if sha256 is not None and len(files) != 1:
        message = gettext("A checksum can be given for one uploaded file only.")
        raise ValidationFailed({"sha256": [message]})

    def fill(staging: Path, budget: Budget) -> str:
        for filename, stream in files:
            if sha256 is not None:
                _verify(filename, stream, sha256)
            if extract and is_archive(filename):
                extract_archive(stream, filename, staging, budget)
            else:
                rel = safe_relpath(filename)
                budget.new_file(rel)
                write_stream(stream, staging, rel, budget)
        return ", ".join(name for name, _ in files)[:1024]

    return fill


def _verify(filename: str, stream: IO[bytes], expected: str) -> None:
    digest = hashlib.sha256()
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
    stream.seek(0)
    if digest.hexdigest() != expected.lower():
        message = gettext(
            "%(name)s: its sha256 %(found)s differs from the given %(expected)s.",
            name=filename,
            found=digest.hexdigest(),
            expected=expected,
        )
        raise ValidationFailed({"files": [message]})


def on_top_of(fill: Fill, previous: Path, manifest: Manifest) -> Fill:
    """``fill``'s files, then every file of the previous version they do not replace: a new
    version that changes a few files of the last one without sending the rest again."""

    def both(staging: Path, budget: Budget) -> str:
        origin = fill(staging, budget)
        link_tree(previous, manifest, staging, budget)
        return origin

    return both


def cluster_path(import_roots: Sequence[str], username: str, raw: str) -> Fill:
    """A fill from a directory of the cluster file system, under one of the import roots."""
    path = Path(os.path.realpath(raw))
    roots = [Path(os.path.realpath(r.replace("{user}", username))) for r in import_roots]
    if not Path(raw).is_absolute():
        raise ValidationFailed({"path": [gettext("Give an absolute path.")]})
    if not any(path == r or r in path.parents for r in roots):
        allowed = ", ".join(str(r) for r in roots) or gettext("none configured")
        message = gettext(
            "%(path)s is not under an import root (%(roots)s).", path=raw, roots=allowed
        )
        raise ValidationFailed({"path": [message]})

    def fill(staging: Path, budget: Budget) -> str:
        copy_as(username, path, staging, budget, "path")
        return str(path)

    return fill


def copy_as(username: str, src: Path, staging: Path, budget: Budget, field: str) -> None:
    """``src``'s tree into ``staging`` as ``username`` reads it: the as-the-user agent packs
    it and every member is checked here (no links, no special files, safe names, the budget),
    so the kernel decides what the user may read, at every moment of the copy."""
    try:
        with actas.packed(username, str(src)) as tar:
            extract_members(tar, staging, budget, field)
    except actas.AgentRefused as exc:
        raise actas.as_field_error(exc, username, field) from None
    except tarfile.TarError as exc:
        message = gettext("%(path)s could not be read: %(reason)s", path=str(src), reason=exc)
        raise ValidationFailed({field: [message]}) from None


def s3_prefix(stores: Mapping[str, Mapping[str, Any]], args: Mapping[str, Any]) -> Fill:
    """A fill from every object under a prefix of a bucket of a configured store."""
    client = s3.client(stores, args)
    bucket, prefix = args["bucket"], args.get("prefix", "")

    def fill(staging: Path, budget: Budget) -> str:
        try:
            s3.download(client, bucket, prefix, staging, budget)
        finally:
            client.close()  # its connection pool; left to the garbage collector it warns
        return f"s3://{args['store']}/{bucket}/{prefix}".rstrip("/")

    return fill


def workspace(directory: Path, name: str, username: str) -> Fill:
    """A fill from what jobs wrote into a dataset's read-write mount, read as ``username``
    (the caller: what they may read of it, nothing more)."""
    if not directory.is_dir():
        message = gettext("%(name)s has no workspace yet: mount it read-write first.", name=name)
        raise ValidationFailed({"source": [message]})

    def fill(staging: Path, budget: Budget) -> str:
        copy_as(username, directory, staging, budget, "source")
        return "workspace"

    return fill
