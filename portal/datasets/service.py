"""Datasets and versions: per-object permissions, and versions made all at once or not at all.

Who may do what (checked here, on the object):

* read: the owner; everyone who can read the project when the dataset is ``project``; every
  logged-in user when ``public``; those a share names, until it expires
  (:mod:`portal.datasets.shares`); platform admins.
* write (edit, delete, new versions, read-write mounts): the owner; holders of
  ``project.manage`` on the project (managers, domain admins) unless the dataset is
  ``private``; platform admins.
* create: ``jobs.submit`` on the project.
* share (and withdraw shares): writers.

A dataset the caller cannot read is reported as not found.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import ColumnElement, Select, and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm
from portal.datasets import s3, sources, unix
from portal.datasets.access import can, now, shared_filter
from portal.datasets.models import Dataset, DatasetVersion, Source, Visibility
from portal.datasets.sources import Fill
from portal.datasets.storage import (
    Budget,
    Limits,
    Manifest,
    Store,
    scan,
)
from portal.errors import Conflict, Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext, ngettext
from portal.models import utcnow
from portal.tenancy.models import Project


@dataclass(frozen=True)
class Settings:
    store: Store
    quota_bytes: int  # per project, all versions of all its datasets
    max_file_bytes: int
    max_files: int
    import_roots: tuple[str, ...]  # "{user}" is replaced by the caller's user name
    s3_stores: Mapping[str, Mapping[str, Any]]

    @classmethod
    def of(cls, config: Mapping[str, Any], instance_path: str) -> Settings:
        return cls(
            store=Store.of(config, instance_path),
            quota_bytes=int(config["DATASET_QUOTA_BYTES"]),
            max_file_bytes=int(config["DATASET_MAX_FILE_BYTES"]),
            max_files=int(config["DATASET_MAX_FILES"]),
            import_roots=tuple(config["DATASET_IMPORT_ROOTS"]),
            s3_stores=dict(config["DATASET_S3_STORES"]),
        )

    @classmethod
    def current(cls) -> Settings:
        """The settings of the app serving the request (its config and instance path)."""
        return cls.of(current_app.config, current_app.instance_path)


# ---------------------------------------------------------------------------- permissions
def visible(access: Access) -> ColumnElement[bool]:
    """SQL condition on the datasets the caller can read."""
    if access.platform_admin:
        return Dataset.id.is_not(None)
    projects = select(Project.id).where(access.project_filter())
    return or_(
        Dataset.owner_id == access.user_id,
        Dataset.visibility == Visibility.PUBLIC.value,
        and_(Dataset.visibility == Visibility.PROJECT.value, Dataset.project_id.in_(projects)),
        shared_filter(access, now()),
    )


def datasets_query(access: Access, project_id: int | None = None) -> Select[Any]:
    stmt = select(Dataset).where(visible(access)).order_by(Dataset.id)
    return stmt if project_id is None else stmt.where(Dataset.project_id == project_id)


def get_dataset(
    session: Session, access: Access, dataset_id: int, *, write: bool = False
) -> Dataset:
    ds = session.get(Dataset, dataset_id)
    if ds is None:
        raise NotFound(gettext("Dataset not found."))
    read, may_write = can(access, ds)
    if not read:
        raise NotFound(gettext("Dataset not found."))
    if write and not may_write:
        raise Forbidden(
            gettext("Only the owner or the project's managers may change %(name)s.", name=ds.name)
        )
    return ds


def get_version(
    session: Session, access: Access, dataset_id: int, version: int | None = None
) -> DatasetVersion:
    """Version ``version`` (the latest when ``None``) of a dataset the caller can read."""
    ds = get_dataset(session, access, dataset_id)
    stmt = select(DatasetVersion).where(DatasetVersion.dataset_id == ds.id)
    if version is None:
        row = session.scalar(stmt.order_by(DatasetVersion.version.desc()).limit(1))
    else:
        row = session.scalar(stmt.where(DatasetVersion.version == version))
    if row is None:
        raise NotFound(
            gettext("Version not found.")
            if version
            else gettext("%(name)s has no version yet.", name=ds.name)
        )
    return row


def version_by_id(session: Session, access: Access, version_id: int) -> DatasetVersion:
    row = session.get(DatasetVersion, version_id)
    if row is None:
        raise NotFound(gettext("Dataset version not found."))
    get_dataset(session, access, row.dataset_id)  # readable, or not found
    return row


def versions_query(dataset_id: int) -> Select[Any]:
    return (
        select(DatasetVersion)
        .where(DatasetVersion.dataset_id == dataset_id)
        .order_by(DatasetVersion.version.desc())
    )


# ---------------------------------------------------------------------------- datasets
def create_dataset(session: Session, access: Access, data: Mapping[str, Any]) -> Dataset:
    project = access.require_project(session.get(Project, data["project_id"]), Perm.JOBS_SUBMIT)
    if session.scalar(
        select(Dataset.id).where(Dataset.project_id == project.id, Dataset.name == data["name"])
    ):
        raise Conflict(
            gettext(
                "Project %(project)s already has a dataset named %(name)s.",
                project=project.name,
                name=data["name"],
            )
        )
    ds = Dataset(
        project_id=project.id,
        owner_id=access.user_id,
        name=data["name"],
        description=data.get("description", ""),
        visibility=data.get("visibility", Visibility.PRIVATE.value),
    )
    session.add(ds)
    session.flush()
    record(
        session, access.user, "dataset.create", "dataset", ds.id,
        after=ds.audit_view(), domain_id=project.domain_id,
    )  # fmt: skip
    session.commit()
    return ds


def update_dataset(
    session: Session, access: Access, dataset_id: int, data: Mapping[str, Any]
) -> Dataset:
    ds = get_dataset(session, access, dataset_id, write=True)
    before = ds.audit_view()
    for key in ("description", "visibility"):
        if key in data:
            setattr(ds, key, data[key])
    ds.updated_at = utcnow()
    record(
        session, access.user, "dataset.update", "dataset", ds.id,
        before=before, after=ds.audit_view(), domain_id=ds.project.domain_id,
    )  # fmt: skip
    session.commit()
    return ds


def delete_dataset(session: Session, access: Access, settings: Settings, dataset_id: int) -> None:
    from portal.labelling.models import LabelTask  # labelling builds on datasets

    ds = get_dataset(session, access, dataset_id, write=True)
    versions = list(session.scalars(versions_query(ds.id)))
    tasks = session.scalar(
        select(func.count())
        .select_from(LabelTask)
        .where(LabelTask.dataset_version_id.in_([v.id for v in versions]))
    )
    if tasks:
        raise Conflict(
            ngettext(
                "%(name)s has %(num)d labelling task: delete it first.",
                "%(name)s has %(num)d labelling tasks: delete those first.",
                tasks,
                name=ds.name,
            )
        )
    paths = [Path(v.path) for v in versions]
    record(
        session, access.user, "dataset.delete", "dataset", ds.id,
        before=ds.audit_view(), domain_id=ds.project.domain_id,
    )  # fmt: skip
    session.delete(ds)
    try:
        session.flush()  # refused by what still refers to it before any file goes
    except IntegrityError:
        session.rollback()
        raise Conflict(gettext("Model versions still refer to %(name)s.", name=ds.name)) from None
    # files first, the row after: a workspace that cannot go whole keeps the dataset (409)
    try:
        unix.remove_files(settings.store.root, ds.id, paths, settings.store.remove)
    except (Conflict, OSError) as exc:
        session.rollback()
        raise Conflict(
            gettext(
                "The files of %(name)s could not all be removed, so it was not deleted; "
                "stop the jobs that use its workspace and try again (%(why)s).",
                name=ds.name,
                why=exc.message if isinstance(exc, Conflict) else exc.strerror or str(exc),
            )
        ) from None
    session.commit()


# ---------------------------------------------------------------------------- versions
def limits_for(session: Session, settings: Settings, project_id: int) -> Limits:
    used = session.scalar(
        select(func.coalesce(func.sum(DatasetVersion.size_bytes), 0))
        .join(Dataset, Dataset.id == DatasetVersion.dataset_id)
        .where(Dataset.project_id == project_id)
    )
    return Limits(
        max_bytes=max(0, settings.quota_bytes - int(used or 0)),
        max_file_bytes=settings.max_file_bytes,
        max_files=settings.max_files,
    )


def new_version(
    session: Session,
    access: Access,
    settings: Settings,
    ds: Dataset,
    *,
    fill: Fill,
    source: Source,
    note: str = "",
    base: DatasetVersion | None = None,
) -> DatasetVersion:
    """Stage, check and commit a new version; on any error nothing of it remains. With
    ``base`` (the previous version), the files ``fill`` does not write are that version's
    (linked, not copied, and not hashed again)."""
    store = settings.store
    staging = store.staging()
    final: Path | None = None
    moved = False
    try:
        before = (Path(base.path), manifest_of(settings, base)) if base is not None else None
        if before is not None:
            fill = sources.on_top_of(fill, *before)
        origin = fill(staging, Budget(limits_for(session, settings, ds.project_id)))
        manifest = scan(staging, before)
        number = 1 + (
            session.scalar(
                select(func.coalesce(func.max(DatasetVersion.version), 0)).where(
                    DatasetVersion.dataset_id == ds.id
                )
            )
            or 0
        )
        final = store.version_dir(ds.id, number)
        store.commit(staging, final, manifest)
        moved = True
        row = DatasetVersion(
            dataset_id=ds.id,
            version=number,
            path=str(final),
            checksum=manifest.checksum,
            file_count=len(manifest.entries),
            size_bytes=manifest.size_bytes,
            source=source.value,
            origin=origin[:1024],
            note=note,
            created_by_id=access.user_id,
        )
        session.add(row)
        ds.updated_at = utcnow()
        session.flush()
        record(
            session, access.user, "dataset.version", "dataset", ds.id,
            after=row.audit_view(), domain_id=ds.project.domain_id,
        )  # fmt: skip
        session.commit()
    except BaseException as exc:
        session.rollback()
        store.remove(staging)
        if moved and final is not None:
            store.remove(final)
        if isinstance(exc, IntegrityError):
            raise Conflict(
                gettext("Another version was made at the same time. Try again.")
            ) from None
        raise
    return row


def add_version(
    session: Session, access: Access, settings: Settings, dataset_id: int, args: Mapping[str, Any]
) -> DatasetVersion:
    """A version from a cluster path, an S3 prefix or the dataset's workspace."""
    ds = get_dataset(session, access, dataset_id, write=True)
    source = Source(args["source"])
    if source == Source.PATH:
        fill = sources.cluster_path(settings.import_roots, access.username, args.get("path", ""))
    elif source == Source.S3:
        fill = sources.s3_prefix(settings.s3_stores, args)
    else:
        fill = sources.workspace(settings.store.workspace(ds.id), ds.name, access.username)
    return new_version(
        session, access, settings, ds, fill=fill, source=source, note=args.get("note", "")
    )


def manifest_of(settings: Settings, version: DatasetVersion) -> Manifest:
    return settings.store.manifest(Path(version.path))


def export_s3(
    session: Session,
    access: Access,
    settings: Settings,
    dataset_id: int,
    *,
    number: int,
    args: Mapping[str, Any],
) -> list[str]:
    version = get_version(session, access, dataset_id, number)
    client = s3.client(settings.s3_stores, args)
    try:
        keys = s3.upload(
            client, args["bucket"], args.get("prefix", ""), Path(version.path),
            manifest_of(settings, version),
        )  # fmt: skip
    finally:
        client.close()
    record(
        session, access.user, "dataset.export", "dataset", dataset_id,
        after={"version": number, "to": f"s3://{args['store']}/{args['bucket']}"},
        domain_id=version.dataset.project.domain_id,
    )  # fmt: skip
    session.commit()
    return keys


# ---------------------------------------------------------------------------- mounts
def mount_name(name: str, dataset_id: int) -> str:
    """A dataset's default mount name in a job spec (ASCII: it names environment variables):
    its own name where that is one, else ``d-<id>`` (a name in Chinese, say)."""
    if re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        return (name if name[:1].isalpha() else f"d-{name}")[:63]
    return f"d-{dataset_id}"


def mount(
    session: Session, access: Access, settings: Settings, dataset_id: int, args: Mapping[str, Any]
) -> dict[str, str]:
    """A job spec's mount entry: a version read-only, or the dataset's workspace read-write."""
    name = args.get("name") or mount_name(get_dataset(session, access, dataset_id).name, dataset_id)
    if args["mode"] == "ro":
        version = get_version(session, access, dataset_id, args.get("version"))
        return {"name": name, "path": version.path, "mode": "ro", "kind": "data"}
    ds = get_dataset(session, access, dataset_id, write=True)
    if args.get("version") is not None:
        message = gettext("Versions cannot be changed: mount them read-only (ro).")
        raise ValidationFailed({"version": [message]})
    workspace = settings.store.workspace(ds.id)
    if not workspace.parent.exists():
        workspace.parent.mkdir(mode=0o700, parents=True)  # its gate: set just below
    workspace.mkdir(exist_ok=True)
    unix.refresh(session, [ds])
    if not unix.grant_workspace(workspace, access.username):
        raise Conflict(
            gettext(
                "The workspace of %(name)s cannot be opened to the jobs of %(user)s.",
                name=ds.name,
                user=access.username,
            )
        )
    return {"name": name, "path": str(workspace), "mode": "rw", "kind": "data"}


def upload_version(
    session: Session,
    access: Access,
    settings: Settings,
    dataset_id: int,
    *,
    fill: Fill,
    note: str = "",
    keep_previous: bool = False,
) -> DatasetVersion:
    """A version from uploaded files; with ``keep_previous``, on top of the latest version's
    files (an upload replaces a file of the same path)."""
    ds = get_dataset(session, access, dataset_id, write=True)
    base = _latest(session, ds.id) if keep_previous else None
    return new_version(
        session, access, settings, ds, fill=fill, source=Source.UPLOAD, note=note, base=base
    )


def _latest(session: Session, dataset_id: int) -> DatasetVersion | None:
    latest: DatasetVersion | None = session.scalar(versions_query(dataset_id).limit(1))
    return latest
