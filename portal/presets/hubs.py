"""Transfers from the two hubs a site fills its mirror from: Hugging Face (``huggingface_hub``,
against ``--endpoint``, the site's ``AIPOOL_HF_ENDPOINT``, ``HF_ENDPOINT`` — e.g.
https://hf-mirror.com in China — or huggingface.co) and ModelScope (its client, against
``--endpoint``, ``AIPOOL_MODELSCOPE_ENDPOINT``, ``MODELSCOPE_ENDPOINT``/``MODELSCOPE_DOMAIN`` or
modelscope.cn).

Each lists the repository's files at the revision with their digests, downloads the wanted
ones into the staging directory (the hubs' clients resume a partial file, within a call and
from one call to the next) and verifies each (:func:`portal.presets.mirror.verify`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from portal.presets.mirror import (
    Manifest,
    MirrorError,
    Progress,
    Remote,
    from_directory,
    now,
    place,
    selected,
    staging_dir,
    target,
    verify,
)
from translations import N_, Message

HF_DEFAULT = "https://huggingface.co"
MODELSCOPE_DEFAULT = "https://www.modelscope.cn"


def hf_endpoint(given: str | None = None) -> str:
    return (
        given or os.environ.get("AIPOOL_HF_ENDPOINT") or os.environ.get("HF_ENDPOINT") or HF_DEFAULT
    ).rstrip("/")


def modelscope_endpoint(given: str | None = None) -> str:
    domain = os.environ.get("MODELSCOPE_DOMAIN", "")
    if domain and "://" not in domain:  # the client's older setting: a host name
        domain = f"https://{domain}"
    return (
        given
        or os.environ.get("AIPOOL_MODELSCOPE_ENDPOINT")
        or os.environ.get("MODELSCOPE_ENDPOINT")
        or domain
        or MODELSCOPE_DEFAULT
    ).rstrip("/")


def _unreachable(repo: str, where: str, exc: Exception) -> MirrorError:
    return MirrorError(
        Message.of(
            N_("%(repo)s could not be listed at %(endpoint)s: %(reason)s"),
            repo=repo,
            endpoint=where,
            reason=f"{type(exc).__name__}: {exc}",
        )
    )


def _none_wanted(repo: str, patterns: Sequence[str]) -> MirrorError:
    return MirrorError(
        Message.of(
            N_("%(repo)s has no file matching %(patterns)s."),
            repo=repo,
            patterns=", ".join(patterns),
        )
    )


def _no_checksum(name: str) -> MirrorError:
    return MirrorError(Message.of(N_("The hub lists no checksum for %(file)s."), file=name))


def _failed(name: str, exc: Exception) -> MirrorError:
    return MirrorError(
        Message.of(
            N_("%(file)s could not be downloaded (run the fill again to resume): %(reason)s"),
            file=name,
            reason=f"{type(exc).__name__}: {exc}",
        )
    )


def _hf_get(where: str, repo: str, commit: str, remote: Remote, staging: Path) -> None:
    """One file into ``staging``, through ``<file>.incomplete``: what an earlier, interrupted
    fill left of it is resumed with a Range request (huggingface_hub's ``http_get`` also
    resumes within the call when the connection breaks)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

    dest = staging / remote.path
    if dest.is_file():  # whole from an earlier try; verified with the rest
        return
    part = dest.with_name(dest.name + ".incomplete")
    part.parent.mkdir(parents=True, exist_ok=True)
    if part.is_file() and remote.size is not None and part.stat().st_size > remote.size:
        part.unlink()  # not a prefix of this file
    headers = build_hf_headers()
    url = hf_hub_url(repo, remote.path, revision=commit, endpoint=where)
    location = get_hf_file_metadata(url, headers=headers, endpoint=where).location
    with part.open("ab") as out:
        http_get(
            location,
            out,
            resume_size=part.stat().st_size,
            headers=headers,
            expected_size=remote.size,
            displayed_filename=remote.path,
        )
    part.replace(dest)


def from_huggingface(
    repo: str,
    *,
    revision: str,
    patterns: Sequence[str],
    staging: Path,
    progress: Progress,
    endpoint: str | None = None,
) -> Manifest:
    from huggingface_hub import HfApi

    where = hf_endpoint(endpoint)
    api = HfApi(endpoint=where)
    try:
        info = api.model_info(repo, revision=revision, files_metadata=True)
    except Exception as exc:  # its HTTP errors and its HTTP library's transport errors
        raise _unreachable(repo, where, exc) from None
    # pinned to the commit the listing describes, so every file comes from the same one
    commit = info.sha or revision
    remotes = {}
    for s in info.siblings or []:
        if s.lfs is not None:
            remotes[s.rfilename] = Remote(s.rfilename, s.lfs.size, "sha256", s.lfs.sha256)
        else:
            remotes[s.rfilename] = Remote(s.rfilename, s.size, "git-sha1", s.blob_id or "")
    wanted = selected(remotes, patterns)
    if not wanted:
        raise _none_wanted(repo, patterns)
    entries = []
    for name in wanted:
        remote = remotes[name]
        if not remote.digest:
            raise _no_checksum(name)
        progress(f"{repo}: {name}")
        try:
            _hf_get(where, repo, commit, remote, staging)
        except Exception as exc:  # its HTTP errors and its HTTP library's transport errors
            raise _failed(name, exc) from None
        entries.append(verify(staging, remote))
    return Manifest(repo, "huggingface", where, revision, commit, now(), tuple(entries))


def from_modelscope(
    repo: str,
    *,
    revision: str,
    patterns: Sequence[str],
    staging: Path,
    progress: Progress,
    endpoint: str | None = None,
) -> Manifest:
    from modelscope_hub import HubApi, RepoType
    from modelscope_hub.errors import FileIntegrityError

    where = modelscope_endpoint(endpoint)
    api = HubApi(endpoint=where)
    try:
        listing = api.list_repo_files(repo, RepoType.MODEL, revision=revision, recursive=True)
    except Exception as exc:  # the client raises requests' and its own errors alike
        raise _unreachable(repo, where, exc) from None
    remotes = {
        f.path: Remote(f.path, f.size, "sha256", f.sha256 or "") for f in listing if not f.is_dir
    }
    wanted = selected(remotes, patterns)
    if not wanted:
        raise _none_wanted(repo, patterns)
    entries = []
    for name in wanted:
        if not remotes[name].digest:
            raise _no_checksum(name)
        progress(f"{repo}: {name}")
        try:
            api.download_file(
                repo,
                RepoType.MODEL,
                name,
                revision=revision,
                local_dir=staging,
                file_size=remotes[name].size,
            )
        except FileIntegrityError as exc:  # its own check, against the CDN's digest
            raise MirrorError(
                Message.of(
                    N_(
                        "Checksum mismatch for %(file)s: the hub lists sha256 %(expected)s, the "
                        "client refused every download of it (%(reason)s); the mirror was left "
                        "as it was."
                    ),
                    file=name,
                    expected=remotes[name].digest,
                    reason=str(exc),
                ),
                refused=True,
            ) from None
        except Exception as exc:
            raise _failed(name, exc) from None
        entries.append(verify(staging, remotes[name]))
    return Manifest(repo, "modelscope", where, revision, revision, now(), tuple(entries))


def snapshot_in(given: Path, repo: str, revision: str | None) -> Path:
    """Where a directory holds the repository: ``DIR/<owner>/<name>``, a Hugging Face cache
    (``DIR/models--<owner>--<name>/snapshots/<commit>``, the one ``refs/<revision>`` names, or
    the only one), else ``DIR`` itself."""
    if (given / repo).is_dir():
        return given / repo
    cache = given / f"models--{repo.replace('/', '--')}"
    snapshots = sorted(p for p in (cache / "snapshots").glob("*") if p.is_dir())
    ref = cache / "refs" / (revision or "main")
    if ref.is_file() and (cache / "snapshots" / ref.read_text().strip()).is_dir():
        return cache / "snapshots" / ref.read_text().strip()
    if revision and (cache / "snapshots" / revision).is_dir():
        return cache / "snapshots" / revision
    return snapshots[0] if len(snapshots) == 1 else given


def fill(
    mirror: Path,
    repo: str,
    source: str,
    *,
    revision: str | None = None,
    modelscope_id: str | None = None,
    patterns: Sequence[str] = (),
    endpoint: str | None = None,
    progress: Progress = lambda _line: None,
) -> Manifest:
    """Fill ``MIRROR/<repo>`` from ``source`` (``huggingface``, ``modelscope`` or a directory)
    and return its manifest. A refused file removes the staging directory (nothing of a bad
    download is kept to resume from); any other failure keeps it, for the next try."""
    final = target(mirror, repo)
    staging = staging_dir(mirror, repo)
    staging.mkdir(parents=True, exist_ok=True)
    try:
        if source == "huggingface":
            manifest = from_huggingface(
                repo,
                revision=revision or "main",
                patterns=patterns,
                staging=staging,
                progress=progress,
                endpoint=endpoint,
            )
        elif source == "modelscope":
            manifest = from_modelscope(
                modelscope_id or repo,
                revision=revision or "master",  # ModelScope's default branch
                patterns=patterns,
                staging=staging,
                progress=progress,
                endpoint=endpoint,
            )
            manifest = replace(manifest, repo=repo)
        else:
            snapshot = snapshot_in(Path(source), repo, revision)
            shutil.rmtree(staging)  # a copy has nothing to resume
            staging.mkdir()
            manifest = from_directory(snapshot, repo, patterns, staging, progress)
    except MirrorError as exc:
        if exc.refused:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    place(staging, final, manifest)
    return manifest
