"""Label sets, tasks, annotation, review and export, with the project's permissions.

* read (label sets, tasks, items, images, progress, export as a download): any permission
  on the project;
* annotate: ``jobs.submit`` (members);
* label sets, new tasks, review: ``project.manage`` (managers, domain admins);
* a new task also needs read access to its dataset version; a labelled export saved as a
  dataset version needs write access to the target dataset.

Anything in a project the caller cannot read is reported as not found.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from PIL import Image, UnidentifiedImageError
from sqlalchemy import Select, func, or_, select, update
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm
from portal.datasets import service as datasets
from portal.datasets.models import DatasetVersion, Source
from portal.datasets.preview import INLINE_IMAGES, media_type
from portal.datasets.storage import Budget, copy_tree, files_under, write_archive
from portal.errors import Conflict, Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import User
from portal.labelling import words
from portal.labelling.formats import Format, Item, Shape, export
from portal.labelling.models import Annotation, ItemStatus, Kind, LabelItem, LabelSet, LabelTask
from portal.labelling.schemas import LABEL, LABEL_RULE
from portal.models import utcnow
from portal.tenancy.models import Project

MAX_ITEMS = 100_000
CLAIM = timedelta(minutes=30)  # how long an item handed out by claim_next stays its annotator's


def _project(session: Session, access: Access, project_id: int, perm: Perm) -> Project:
    return access.require_project(session.get(Project, project_id), perm)


# ---------------------------------------------------------------------------- label sets
def label_sets_query(access: Access, project_id: int | None = None) -> Select[Any]:
    projects = select(Project.id).where(access.project_filter())
    stmt = select(LabelSet).where(LabelSet.project_id.in_(projects)).order_by(LabelSet.id)
    return stmt if project_id is None else stmt.where(LabelSet.project_id == project_id)


def get_label_set(session: Session, access: Access, set_id: int) -> LabelSet:
    row = session.get(LabelSet, set_id)
    if row is None or not access.on_project(project_of(session, row.project_id)):
        raise NotFound(gettext("Label set not found."))
    return row


def project_of(session: Session, project_id: int) -> Project:
    project = session.get(Project, project_id)
    if project is None:  # pragma: no cover - rows cascade with their project
        raise NotFound(gettext("Project not found."))
    return project


def _labels(names: Sequence[str]) -> list[str]:
    """The labels, each one a usable name (the pages do not pass the API's schema)."""
    for name in names:
        if not LABEL.match(name):
            message = gettext("%(label)s: %(rule)s", label=name, rule=gettext(LABEL_RULE))
            raise ValidationFailed({"labels": [message]})
    if len(set(names)) != len(names):
        raise ValidationFailed({"labels": [gettext("Each label may appear only once.")]})
    return list(names)


def create_label_set(session: Session, access: Access, data: Mapping[str, Any]) -> LabelSet:
    project = _project(session, access, data["project_id"], Perm.PROJECT_MANAGE)
    if session.scalar(
        select(LabelSet.id).where(LabelSet.project_id == project.id, LabelSet.name == data["name"])
    ):
        raise Conflict(
            gettext(
                "Project %(project)s already has a label set named %(name)s.",
                project=project.name,
                name=data["name"],
            )
        )
    row = LabelSet(project_id=project.id, name=data["name"], labels=_labels(data["labels"]))
    session.add(row)
    session.flush()
    record(
        session, access.user, "labelset.create", "label_set", row.id,
        after=row.audit_view(), domain_id=project.domain_id,
    )  # fmt: skip
    session.commit()
    return row


def update_label_set(
    session: Session, access: Access, set_id: int, data: Mapping[str, Any]
) -> LabelSet:
    """Labels may be added; ones already used by annotations cannot go."""
    row = get_label_set(session, access, set_id)
    project = _project(session, access, row.project_id, Perm.PROJECT_MANAGE)
    before = row.audit_view()
    if "labels" in data:
        new = _labels(data["labels"])
        used = set(
            session.scalars(
                select(Annotation.label)
                .join(LabelItem, LabelItem.id == Annotation.item_id)
                .join(LabelTask, LabelTask.id == LabelItem.task_id)
                .where(LabelTask.label_set_id == row.id)
            )
        )
        gone = sorted(used - set(new))
        if gone:
            raise Conflict(
                gettext("Labels in use cannot be removed: %(labels)s.", labels=", ".join(gone))
            )
        row.labels = new
    record(
        session, access.user, "labelset.update", "label_set", row.id,
        before=before, after=row.audit_view(), domain_id=project.domain_id,
    )  # fmt: skip
    session.commit()
    return row


# ---------------------------------------------------------------------------- tasks
def tasks_query(access: Access, project_id: int | None = None) -> Select[Any]:
    projects = select(Project.id).where(access.project_filter())
    stmt = select(LabelTask).where(LabelTask.project_id.in_(projects)).order_by(LabelTask.id)
    return stmt if project_id is None else stmt.where(LabelTask.project_id == project_id)


def get_task(session: Session, access: Access, task_id: int, perm: Perm | None = None) -> LabelTask:
    """A task of a project the caller holds any permission on (``perm`` when given)."""
    task = session.get(LabelTask, task_id)
    if task is None or not access.on_project(project_of(session, task.project_id)):
        raise NotFound(gettext("Labelling task not found."))
    if perm is not None:
        _project(session, access, task.project_id, perm)
    return task


def create_task(
    session: Session, access: Access, settings: datasets.Settings, data: Mapping[str, Any]
) -> LabelTask:
    """A task over every image of a dataset version the caller can read."""
    project = _project(session, access, data["project_id"], Perm.PROJECT_MANAGE)
    label_set = get_label_set(session, access, data["label_set_id"])
    if label_set.project_id != project.id:
        raise ValidationFailed(
            {"label_set_id": [gettext("The label set belongs to another project.")]}
        )
    version = datasets.version_by_id(session, access, data["dataset_version_id"])
    images = [
        e
        for e in datasets.manifest_of(settings, version).entries
        if media_type(e.path) in INLINE_IMAGES
    ]
    if not images:
        raise ValidationFailed(
            {"dataset_version_id": [gettext("The dataset version holds no images.")]}
        )
    if len(images) > MAX_ITEMS:
        raise ValidationFailed(
            {"dataset_version_id": [gettext("A task holds at most %(n)d images.", n=MAX_ITEMS)]}
        )
    task = LabelTask(
        project_id=project.id,
        name=data["name"],
        dataset_version_id=version.id,
        label_set_id=label_set.id,
        created_by_id=access.user_id,
    )
    session.add(task)
    session.flush()
    for e in images:
        width, height = _size(Path(version.path) / e.path)
        if width:
            session.add(LabelItem(task_id=task.id, path=e.path, width=width, height=height))
    record(
        session, access.user, "labeltask.create", "label_task", task.id,
        after=task.audit_view(), domain_id=project.domain_id,
    )  # fmt: skip
    session.commit()
    return task


def _size(path: Path) -> tuple[int, int]:
    try:
        with Image.open(path) as img:
            return img.size
    except (UnidentifiedImageError, OSError):
        return 0, 0  # not an image after all: not an item


def progress(session: Session, task: LabelTask) -> dict[str, Any]:
    counts = Counter(
        dict(
            session.execute(
                select(LabelItem.status, func.count())
                .where(LabelItem.task_id == task.id)
                .group_by(LabelItem.status)
            ).all()
        )
    )
    by_user = session.execute(
        select(User.username, func.count())
        .join(LabelItem, LabelItem.annotated_by_id == User.id)
        .where(LabelItem.task_id == task.id, LabelItem.status != ItemStatus.NEW.value)
        .group_by(User.username)
    ).all()
    total = sum(counts.values())
    done = total - counts[ItemStatus.NEW.value] - counts[ItemStatus.REJECTED.value]
    return {
        "total": total,
        **{s.value: counts[s.value] for s in ItemStatus},
        "done_percent": round(100 * done / total, 1) if total else 0.0,
        "by_annotator": dict(sorted(by_user)),
    }


def items_query(task_id: int, status: str | None = None) -> Select[Any]:
    stmt = select(LabelItem).where(LabelItem.task_id == task_id).order_by(LabelItem.id)
    return stmt if status is None else stmt.where(LabelItem.status == status)


def get_item(
    session: Session, access: Access, task_id: int, item_id: int, perm: Perm | None = None
) -> tuple[LabelTask, LabelItem]:
    task = get_task(session, access, task_id, perm)
    item = session.get(LabelItem, item_id)
    if item is None or item.task_id != task.id:
        raise NotFound(gettext("Item not found."))
    return task, item


def annotations_of(session: Session, item_id: int) -> list[Annotation]:
    return list(
        session.scalars(
            select(Annotation).where(Annotation.item_id == item_id).order_by(Annotation.id)
        )
    )


def _todo_for(access: Access, now: datetime) -> list[Any]:
    """Items still to do (new, or rejected by a reviewer) that no other annotator holds."""
    return [
        LabelItem.status.in_((ItemStatus.NEW.value, ItemStatus.REJECTED.value)),
        or_(
            LabelItem.annotated_by_id.is_(None),
            LabelItem.annotated_by_id == access.user_id,
            LabelItem.updated_at < now - CLAIM,
        ),
    ]


def next_item(session: Session, access: Access, task_id: int) -> LabelItem | None:
    """The item :func:`claim_next` would hand the caller now; a look that holds nothing."""
    task = get_task(session, access, task_id)
    item: LabelItem | None = session.scalar(
        items_query(task.id).where(*_todo_for(access, utcnow())).limit(1)
    )
    return item


def claim_next(session: Session, access: Access, task_id: int) -> LabelItem | None:
    """The first item still to do (new, or rejected by a reviewer) that no other annotator
    holds, held for the caller. A new item is held for :data:`CLAIM` (in its annotator and
    time columns), so several annotators working through one task get different items; a
    rejected item goes back to whoever annotated it, or to anyone after :data:`CLAIM`. Only
    an annotator of the task's project (``jobs.submit``) may claim."""
    task = get_task(session, access, task_id)
    if Perm.JOBS_SUBMIT not in access.on_project(project_of(session, task.project_id)):
        raise Forbidden(gettext("Only the project's annotators may take items to annotate."))
    for _ in range(5):  # a claim lost to a concurrent request: take the next one
        now = utcnow()
        todo = _todo_for(access, now)
        item: LabelItem | None = session.scalar(items_query(task.id).where(*todo).limit(1))
        if item is None or item.status != ItemStatus.NEW:
            return item
        claimed = session.execute(
            update(LabelItem)
            .where(LabelItem.id == item.id, *todo)
            .values(annotated_by_id=access.user_id, updated_at=now)
        )
        session.commit()
        if claimed.rowcount == 1:  # type: ignore[attr-defined]
            session.refresh(item)
            return item
    raise Conflict(gettext("Other annotators took the next items. Try again."))


# ---------------------------------------------------------------------------- annotating
def _check_shape(i: int, a: Mapping[str, Any], labels: Sequence[str], item: LabelItem) -> None:
    kind, points = a["kind"], a["points"]
    wanted = {Kind.CLASS: (0, 0), Kind.POINT: (1, 1), Kind.BBOX: (2, 2), Kind.POLYGON: (3, 1000)}
    low, high = wanted[Kind(kind)]
    where = f"annotations.{i}"
    if a["label"] not in labels:
        message = gettext("The label %(label)s is not in the label set.", label=a["label"])
        raise ValidationFailed({where: [message]})
    if not low <= len(points) <= high:
        message = gettext(
            "%(kind)s needs %(low)d to %(high)d points, not %(n)d.",
            kind=words.shape(kind),
            low=low,
            high=high,
            n=len(points),
        )
        raise ValidationFailed({where: [message]})
    for x, y in points:
        if not (0 <= x <= item.width and 0 <= y <= item.height):
            message = gettext(
                "The point (%(x)s, %(y)s) is outside the image (%(width)d by %(height)d pixels).",
                x=x,
                y=y,
                width=item.width,
                height=item.height,
            )
            raise ValidationFailed({where: [message]})
    if kind == Kind.BBOX and (points[0][0] == points[1][0] or points[0][1] == points[1][1]):
        raise ValidationFailed({where: [gettext("A box needs a width and a height.")]})
    if kind == Kind.POLYGON and _area(points) == 0:
        raise ValidationFailed({where: [gettext("A polygon needs an area.")]})


def _area(points: Sequence[Sequence[float]]) -> float:
    from portal.labelling.formats import polygon_area

    return polygon_area([(p[0], p[1]) for p in points])


def save_annotations(
    session: Session,
    access: Access,
    task_id: int,
    item_id: int,
    shapes: Sequence[Mapping[str, Any]],
) -> LabelItem:
    """Replace an item's annotations (all of them, in one transaction)."""
    task, item = get_item(session, access, task_id, item_id, Perm.JOBS_SUBMIT)
    if item.status == ItemStatus.ACCEPTED:
        raise Conflict(gettext("The item was accepted in review: a reviewer must reject it first."))
    labels = task.label_set.labels
    for i, a in enumerate(shapes):
        _check_shape(i, a, labels, item)
    for old in annotations_of(session, item.id):
        session.delete(old)
    for a in shapes:
        session.add(
            Annotation(
                item_id=item.id,
                kind=a["kind"],
                label=a["label"],
                points=[[float(x), float(y)] for x, y in a["points"]],
                author_id=access.user_id,
            )
        )
    item.status = ItemStatus.ANNOTATED.value
    item.annotated_by_id = access.user_id
    item.updated_at = utcnow()
    record(
        session, access.user, "labelitem.annotate", "label_item", item.id,
        after={"task_id": task.id, "annotations": len(shapes)},
        domain_id=project_of(session, task.project_id).domain_id,
    )  # fmt: skip
    session.commit()
    return item


def review(
    session: Session, access: Access, task_id: int, item_id: int, data: Mapping[str, Any]
) -> LabelItem:
    task, item = get_item(session, access, task_id, item_id, Perm.PROJECT_MANAGE)
    if item.status == ItemStatus.NEW:
        raise Conflict(gettext("The item has no annotations to review yet."))
    item.status = (
        ItemStatus.ACCEPTED.value if data["decision"] == "accept" else ItemStatus.REJECTED.value
    )
    item.reviewed_by_id = access.user_id
    item.review_note = data.get("note", "")
    item.updated_at = utcnow()
    record(
        session, access.user, f"labelitem.{data['decision']}", "label_item", item.id,
        after={"task_id": task.id, "note": item.review_note},
        domain_id=project_of(session, task.project_id).domain_id,
    )  # fmt: skip
    session.commit()
    return item


# ---------------------------------------------------------------------------- export
def _export_items(session: Session, task: LabelTask, only_accepted: bool) -> list[Item]:
    stmt = items_query(task.id)
    if only_accepted:
        stmt = stmt.where(LabelItem.status == ItemStatus.ACCEPTED.value)
    else:
        stmt = stmt.where(LabelItem.status != ItemStatus.NEW.value)
    items = []
    for row in session.scalars(stmt):
        shapes = tuple(
            Shape(a.kind, a.label, tuple((p[0], p[1]) for p in a.points))
            for a in annotations_of(session, row.id)
        )
        items.append(Item(row.path, row.width, row.height, shapes))
    if not items:
        message = (
            gettext("No accepted item to export.")
            if only_accepted
            else gettext("No annotated item to export.")
        )
        raise ValidationFailed({"only_accepted": [message]})
    return items


def export_dir(
    session: Session, task: LabelTask, fmt: Format, only_accepted: bool, dest: Path
) -> None:
    items = _export_items(session, task, only_accepted)
    export(fmt, items, task.label_set.labels, Path(task.dataset_version.path), dest)


def export_archive(
    session: Session, access: Access, task_id: int, fmt: Format, only_accepted: bool
) -> tuple[IO[bytes], str]:
    """The export as a gzipped tar (a temporary file, at its start) and its file name."""
    task = get_task(session, access, task_id)
    name = f"{task.name}-{fmt.value}"
    with tempfile.TemporaryDirectory() as tmp:
        export_dir(session, task, fmt, only_accepted, Path(tmp))
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it
        write_archive(Path(tmp), files_under(Path(tmp)), name, spool)
    spool.seek(0)
    return spool, f"{name}.tar.gz"


def export_version(
    session: Session,
    access: Access,
    settings: datasets.Settings,
    task_id: int,
    data: Mapping[str, Any],
) -> DatasetVersion:
    """The export saved as a new version of a dataset the caller may write to."""
    task = get_task(session, access, task_id)
    target = datasets.get_dataset(session, access, data["dataset_id"], write=True)
    fmt = Format(data["format"])
    only_accepted = data["only_accepted"]

    def fill(staging: Path, budget: Budget) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            export_dir(session, task, fmt, only_accepted, Path(tmp))
            copy_tree(Path(tmp), staging, budget)
        return f"labelling task {task.id} ({fmt.value})"

    return datasets.new_version(
        session, access, settings, target, fill=fill, source=Source.LABELS,
        note=data.get("note")
        or gettext("%(format)s export of %(task)s", format=words.FORMATS[fmt], task=task.name),
    )  # fmt: skip
