"""A dataset belongs to a project; its versions are immutable directories with checksums."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import BigInteger, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.extensions import Base
from portal.identity.models import User
from portal.models import UTCDateTime, utcnow
from portal.sharing import share_table
from portal.tenancy.models import Project


class Visibility(StrEnum):
    PRIVATE = "private"  # the owner (and platform admins)
    PROJECT = "project"  # everyone who can read the project
    PUBLIC = "public"  # every logged-in user, any tenant


class Source(StrEnum):
    UPLOAD = "upload"
    PATH = "path"
    S3 = "s3"
    LABELS = "labels"
    WORKSPACE = "workspace"  # what jobs wrote into the rw mount


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(255), default="")
    visibility: Mapped[str] = mapped_column(String(16), default=Visibility.PRIVATE.value)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    project: Mapped[Project] = relationship(lazy="joined")
    owner: Mapped[User] = relationship(lazy="joined")
    shares: Mapped[list[DatasetShare]] = relationship(
        lazy="selectin", cascade="all, delete-orphan", passive_deletes=True
    )

    def audit_view(self) -> dict[str, object]:
        return {
            "name": self.name,
            "project_id": self.project_id,
            "owner_id": self.owner_id,
            "description": self.description,
            "visibility": self.visibility,
        }


class DatasetVersion(Base):
    """Version ``version`` (1, 2, …) of a dataset: the read-only files under ``path``."""

    __tablename__ = "dataset_versions"
    __table_args__ = (
        UniqueConstraint("dataset_id", "version"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(String(1024))  # absolute
    # sha256 over the sorted "relative path\0file sha256\n" lines of every file
    checksum: Mapped[str] = mapped_column(String(64))
    file_count: Mapped[int] = mapped_column(Integer)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    source: Mapped[str] = mapped_column(String(16))
    origin: Mapped[str] = mapped_column(String(1024), default="")  # path, s3://…, task id
    note: Mapped[str] = mapped_column(String(255), default="")
    created_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    dataset: Mapped[Dataset] = relationship(lazy="joined")

    def audit_view(self) -> dict[str, object]:
        return {
            "dataset_id": self.dataset_id,
            "version": self.version,
            "checksum": self.checksum,
            "file_count": self.file_count,
            "size_bytes": self.size_bytes,
            "source": self.source,
            "origin": self.origin,
        }


@share_table
class DatasetShare(Base):
    """Read access to a dataset for a user, everyone who can read a project, or a domain (a
    tenant), until ``expires_at`` (none: until withdrawn)."""

    __tablename__ = "dataset_shares"
    __table_args__ = (UniqueConstraint("dataset_id", "grantee_kind", "grantee_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    grantee_kind: Mapped[str] = mapped_column(String(16))
    grantee_id: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    def audit_view(self) -> dict[str, object]:
        return {
            "dataset_id": self.dataset_id,
            "grantee_kind": self.grantee_kind,
            "grantee_id": self.grantee_id,
            "expires_at": self.expires_at,
        }
