"""Named spec templates, and the recorded spec of every submitted job (to re-run it).

Both live in plain files under a state directory chosen by the caller::

    <state>/templates/<name>.yaml            a template: a spec, possibly partial
    <state>/history/<cluster>/<job id>.json  the spec a job was submitted with
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from jobspec.codec import spec_to_data
from jobspec.errors import LibraryError, SpecError
from jobspec.fields import NAME, NAME_HINT
from jobspec.files import parse_documents
from jobspec.model import Spec
from jobspec.schema import load_spec

_CLUSTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` on top of ``base``; mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_override(text: str) -> dict[str, Any]:
    """``resources.gpus=0.5`` → ``{"resources": {"gpus": 0.5}}`` (the value is read as YAML)."""
    path, sep, raw = text.partition("=")
    keys = path.strip().split(".")
    if not sep or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in keys):
        raise SpecError([f"override {text!r}: write it as key.subkey=value"])
    try:
        value: Any = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    for key in reversed(keys):
        value = {key: value}
    return dict(value)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Templates:
    """A directory of named YAML templates."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, name: str) -> Path:
        if not re.fullmatch(NAME, name):
            raise LibraryError(f"template name {name!r} is not allowed: {NAME_HINT}")
        return self.root / f"{name}.yaml"

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.yaml") if re.fullmatch(NAME, p.stem))

    def save(self, name: str, spec: Spec | Mapping[str, Any]) -> Path:
        """Save a spec (or a partial spec mapping) as template ``name``."""
        data = spec_to_data(spec) if isinstance(spec, Spec) else dict(spec)
        path = self._path(name)
        _write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        return path

    def raw(self, name: str) -> dict[str, Any]:
        path = self._path(name)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise LibraryError(f"no template named {name!r} in {self.root}") from None
        docs = parse_documents(text)
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise LibraryError(f"template {name!r} must hold exactly one spec mapping")
        return docs[0]

    def instantiate(
        self, name: str, overrides: Mapping[str, Any] | None = None, *, new_name: str | None = None
    ) -> Spec:
        """A spec from template ``name`` with ``overrides`` merged in, validated in full."""
        data = merge(self.raw(name), overrides or {})
        if new_name is not None:
            data["name"] = new_name
        return load_spec(data)


class History:
    """The spec each job was submitted with, keyed by cluster and job id."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, cluster: str, job_id: int) -> Path:
        if not _CLUSTER.fullmatch(cluster):
            raise LibraryError(f"cluster name {cluster!r} is not allowed")
        if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id < 1:
            raise LibraryError(f"job id {job_id!r} is not a positive integer")
        return self.root / cluster / f"{job_id}.json"

    def record(self, cluster: str, job_id: int, spec: Spec) -> Path:
        path = self._path(cluster, job_id)
        payload = {"cluster": cluster, "job_id": job_id, "spec": spec_to_data(spec)}
        _write_atomic(path, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
        return path

    def has(self, cluster: str, job_id: int) -> bool:
        return self._path(cluster, job_id).is_file()

    def spec(self, cluster: str, job_id: int) -> Spec:
        """The spec job ``job_id`` was submitted with, ready to submit again."""
        path = self._path(cluster, job_id)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LibraryError(f"no recorded spec for job {job_id} on {cluster}") from None
        except (OSError, ValueError) as exc:
            raise LibraryError(f"{path}: {exc}") from None
        try:
            return load_spec(payload["spec"])
        except (SpecError, KeyError, TypeError) as exc:
            raise LibraryError(f"recorded spec of job {job_id} is no longer valid: {exc}") from None

    def rerun_spec(
        self, cluster: str, job_id: int, overrides: Mapping[str, Any] | None = None
    ) -> Spec:
        """The recorded spec with ``overrides``; its job-id dependencies are dropped
        (they referred to jobs of the first run)."""
        data = spec_to_data(self.spec(cluster, job_id))
        data.pop("dependencies", None)
        return load_spec(merge(data, overrides or {}))
