"""Where a model's runs work: a fresh directory of the user's for each job, the end of its
output, the datasets it reads, and the directory's removal with its model. Fine-tuning and
evaluation (:mod:`portal.registry.runs`), uploads and deletions (:mod:`portal.registry.service`)
and inference services use them."""

from __future__ import annotations

from pathlib import Path

from flask import current_app
from sqlalchemy.orm import Session

from portal import userdirs
from portal.authz import Access
from portal.errors import NotFound, ValidationFailed
from portal.i18n import gettext
from portal.userfiles import read_tail


def new_workdir(username: str) -> Path:
    """A fresh directory for one job of ``username``'s, theirs and the portal's group's only
    (``<MODEL_WORK>/<user>/<random>``, portal/userdirs.py): the job writes its results there."""
    return userdirs.run_dir(userdirs.work_root(), username, current_app.config["SERVICE_GROUP"])


def log_tail(workdir: Path, owner: str, limit: int = 600) -> str:
    """The end of the job's output, if it is a file of the job's user (never a link)."""
    logs = sorted(workdir.glob("*.out"))
    text = read_tail(logs[-1], owner, limit) if logs else None
    return text or ""


def dataset_mount(
    session: Session, access: Access, dataset_version_id: int | None, name: str
) -> list[dict[str, str]]:
    """The job spec's read-only mount of a dataset version the caller can read."""
    if dataset_version_id is None:
        return []
    from portal.datasets.service import version_by_id as dataset_version

    try:
        version = dataset_version(session, access, dataset_version_id)
    except NotFound:
        message = gettext(
            "There is no dataset version %(id)s that you can read.", id=dataset_version_id
        )
        raise ValidationFailed({"dataset_version_id": [message]}) from None
    return [{"name": name, "path": version.path, "mode": "ro", "kind": "data"}]


def remove_workdir(path: str) -> None:
    if path and Path(path).is_relative_to(userdirs.work_root()):
        userdirs.remove_run(path)
