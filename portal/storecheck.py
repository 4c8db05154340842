"""Does the file store agree with the database? Checked when the portal starts.

The portal keeps its rows in the database and its dataset versions and model artifacts as
directories (``<datasets>/<id>/v<n>``, ``<models>/<id>/<n>``). The two must come and go
together: a directory that no row names is left from another database (a lab torn down
without its files, a restored backup) and would be taken for a new dataset's or model's
files; a row whose directory is gone is data lost. Each is named, so an operator can act.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from portal.datasets.models import DatasetVersion
from portal.registry.models import ModelVersion

_DATASET_VERSION = re.compile(r"^v\d+$")


@dataclass(frozen=True, slots=True)
class Mismatch:
    kind: str  # "dataset" or "model"
    path: Path
    problem: str  # "no row" (an orphan directory) or "missing" (a row without its files)

    def line(self) -> str:
        if self.problem == "missing":
            return f"{self.kind} files missing: {self.path} (the database lists them)"
        return f"{self.kind} directory without a database row: {self.path}"


def check(session: Session, datasets: Path, models: Path) -> list[Mismatch]:
    """Every disagreement between the rows and the two stores, sorted by path."""
    out: list[Mismatch] = []
    rows = {Path(p) for p in session.scalars(select(DatasetVersion.path))}
    on_disk = {
        v
        for d in _children(datasets)
        if d.name.isdigit()
        for v in _children(d)
        if _DATASET_VERSION.match(v.name)
    }
    out += [Mismatch("dataset", p, "no row") for p in on_disk - rows]
    out += [Mismatch("dataset", p, "missing") for p in rows - on_disk if p.is_relative_to(datasets)]
    versions = session.execute(
        select(ModelVersion.model_id, ModelVersion.number, ModelVersion.storage)
    ).all()
    every = {models / str(m) / str(n) for m, n, _ in versions}
    stored = {models / storage for _, _, storage in versions if storage}
    model_disk = {
        v for d in _children(models) if d.name.isdigit() for v in _children(d) if v.name.isdigit()
    }
    out += [Mismatch("model", p, "no row") for p in model_disk - every]
    out += [Mismatch("model", p, "missing") for p in stored - model_disk]
    return sorted(out, key=lambda m: str(m.path))


def _children(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()]
    except (FileNotFoundError, NotADirectoryError):
        return []
