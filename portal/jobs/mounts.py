"""A job spec's mounts, checked against what its user may read before it is submitted.

The file system has the last word (the job runs as its user, and the portal's directories
are closed to others), but a job that names another tenant's data should be told so at once,
not fail on a node. A mount inside what the portal keeps is allowed only where the portal lets
the caller in: a dataset version they may read, a dataset workspace they may write, their own
job directories. The portal's own files (its database, the model store) are never mounted.
Paths elsewhere are the user's own business.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy.orm import Session

from jobspec import ClusterConfig, load_spec
from jobspec.render import resolve_mounts
from portal import userdirs
from portal.authz import Access
from portal.errors import Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext

_VERSION = re.compile(r"v([1-9][0-9]{0,8})")


def _under(path: Path, root: Path) -> tuple[str, ...] | None:
    try:
        return path.relative_to(Path(os.path.normpath(root))).parts
    except ValueError:
        return None


def check(session: Session, access: Access, spec: Mapping[str, Any], cfg: ClusterConfig) -> None:
    """Refuse (422, naming the mount) what ``access`` may not read or write. ``spec`` is one
    that ``spec_job`` has already accepted."""
    from portal.datasets.unix import store_root
    from portal.registry import storage

    store = store_root()
    own_roots = [userdirs.user_root(), userdirs.work_root()]
    closed = [storage.root(), Path(current_app.instance_path)]
    for mount in resolve_mounts(load_spec(spec).mounts, cfg):
        path = Path(os.path.normpath(mount.path))
        name = mount.name
        refusal = ValidationFailed(
            {
                "spec": [
                    gettext(
                        "mounts: %(name)s: %(path)s is not yours to mount (the portal's or "
                        "another user's), or does not exist.",
                        name=name,
                        path=str(path),
                    )
                ]
            }
        )
        if (parts := _under(path, store)) is not None:
            try:
                _dataset_mount(session, access, parts, mount.mode.value)
            except (NotFound, Forbidden):
                raise refusal from None
            continue
        owned = [p for root in own_roots if (p := _under(path, root)) is not None]
        if owned:
            if not owned[0] or owned[0][0] != access.username:
                raise refusal
            continue
        if any(_under(path, root) is not None for root in closed):
            raise refusal


def _dataset_mount(
    session: Session,
    access: Access,
    parts: tuple[str, ...],
    mode: str,
) -> None:
    from portal.datasets.service import get_dataset, get_version

    if not parts or not parts[0].isdigit() or len(parts[0]) > 9:
        raise NotFound("not a dataset")
    dataset_id = int(parts[0])
    if len(parts) >= 2 and (m := _VERSION.fullmatch(parts[1])):
        get_version(session, access, dataset_id, int(m.group(1)))
        if mode != "ro":
            raise NotFound("versions are read-only")
    elif len(parts) >= 2 and parts[1] == "workspace":
        get_dataset(session, access, dataset_id, write=True)
    else:
        raise NotFound("not a version or a workspace")
