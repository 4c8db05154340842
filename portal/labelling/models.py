"""Label sets, labelling tasks over a dataset version, their items and annotations.

The one internal format: an annotation has a ``kind`` and ``points`` in image pixels —
``class`` none, ``point`` one, ``bbox`` two corners (x0, y0), (x1, y1), ``polygon`` three
or more vertices.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.datasets.models import DatasetVersion
from portal.extensions import Base
from portal.models import UTCDateTime, utcnow


class Kind(StrEnum):
    CLASS = "class"
    BBOX = "bbox"
    POLYGON = "polygon"
    POINT = "point"


class ItemStatus(StrEnum):
    NEW = "new"
    ANNOTATED = "annotated"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class LabelSet(Base):
    __tablename__ = "label_sets"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    labels: Mapped[list[Any]] = mapped_column(JSON)  # ["cat", "dog", …], in shortcut order
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    def audit_view(self) -> dict[str, object]:
        return {"project_id": self.project_id, "name": self.name, "labels": self.labels}


class LabelTask(Base):
    __tablename__ = "label_tasks"
    __table_args__ = ({"sqlite_autoincrement": True},)  # ids never reused: they name files

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    dataset_version_id: Mapped[int] = mapped_column(
        ForeignKey("dataset_versions.id", ondelete="CASCADE"), index=True
    )
    label_set_id: Mapped[int] = mapped_column(ForeignKey("label_sets.id"))
    created_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    label_set: Mapped[LabelSet] = relationship(lazy="joined")
    dataset_version: Mapped[DatasetVersion] = relationship(lazy="joined")

    def audit_view(self) -> dict[str, object]:
        return {
            "project_id": self.project_id,
            "name": self.name,
            "dataset_version_id": self.dataset_version_id,
            "label_set_id": self.label_set_id,
        }


class LabelItem(Base):
    """One image of the task's dataset version."""

    __tablename__ = "label_items"
    __table_args__ = (UniqueConstraint("task_id", "path"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("label_tasks.id", ondelete="CASCADE"))
    path: Mapped[str] = mapped_column(String(1024))  # relative to the version's files
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default=ItemStatus.NEW.value, index=True)
    annotated_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    reviewed_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    review_note: Mapped[str] = mapped_column(String(255), default="")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Annotation(Base):
    __tablename__ = "annotations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(
        ForeignKey("label_items.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(64))
    points: Mapped[list[Any]] = mapped_column(JSON)  # [[x, y], …] in image pixels
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
