"""Registered models → versions (status, tags, aliases), shares and evaluations."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.extensions import Base
from portal.models import UTCDateTime, utcnow
from portal.sharing import share_table
from portal.tenancy.models import Project


class Visibility(StrEnum):
    PRIVATE = "private"  # the owner and the project's managers
    PROJECT = "project"  # everyone who can read the project
    DOMAIN = "domain"  # everyone in the project's domain
    PUBLIC = "public"  # every user of the portal


class VersionStatus(StrEnum):
    TRAINING = "training"  # a job is producing the artifacts
    READY = "ready"
    STAGING = "staging"
    PRODUCTION = "production"
    ARCHIVED = "archived"
    FAILED = "failed"


class Source(StrEnum):
    UPLOAD = "upload"
    JOB = "job"
    HUGGINGFACE = "huggingface"
    MODELSCOPE = "modelscope"
    PRESET = "preset"


class ShareMode(StrEnum):
    READ = "read"
    WRITE = "write"


class RegisteredModel(Base):
    __tablename__ = "registered_models"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True
    )
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(1000), default="")
    task: Mapped[str] = mapped_column(String(64), default="")
    framework: Mapped[str] = mapped_column(String(64), default="")
    visibility: Mapped[str] = mapped_column(String(16), default=Visibility.PRIVATE.value)
    preset: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    project: Mapped[Project] = relationship(lazy="joined")

    def audit_view(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "project_id": self.project_id,
            "task": self.task,
            "framework": self.framework,
            "visibility": self.visibility,
        }


class ModelVersion(Base):
    __tablename__ = "model_versions"
    __table_args__ = (
        UniqueConstraint("model_id", "number"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(
        ForeignKey("registered_models.id", ondelete="CASCADE"), index=True
    )
    number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default=VersionStatus.READY.value)
    source: Mapped[str] = mapped_column(String(16))
    card: Mapped[str] = mapped_column(Text, default="")
    card_meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    input_schema: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    output_schema: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    files: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    parameters: Mapped[int | None] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64), default="")  # of the file manifest
    storage: Mapped[str] = mapped_column(String(255), default="")  # under MODEL_STORAGE
    encrypted: Mapped[bool] = mapped_column(Boolean, default=False)
    tags: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # latest evaluation
    # the task of that evaluation's report ("" before reports named it: classification)
    metrics_task: Mapped[str] = mapped_column(String(64), default="", server_default="")
    # lineage: the job and dataset version that produced it, and the version it started from
    job_id: Mapped[int | None] = mapped_column(Integer)
    dataset_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("dataset_versions.id", ondelete="SET NULL")
    )
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="SET NULL")
    )
    workdir: Mapped[str] = mapped_column(String(255), default="")  # of a training job
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    model: Mapped[RegisteredModel] = relationship(lazy="joined")


class ModelAlias(Base):
    """A movable name for one version (``champion``, ``prod``), as in MLflow."""

    __tablename__ = "model_aliases"
    __table_args__ = (UniqueConstraint("model_id", "alias"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(
        ForeignKey("registered_models.id", ondelete="CASCADE"), index=True
    )
    alias: Mapped[str] = mapped_column(String(64))
    version_id: Mapped[int] = mapped_column(ForeignKey("model_versions.id", ondelete="CASCADE"))


@share_table
class ModelShare(Base):
    __tablename__ = "model_shares"
    __table_args__ = (UniqueConstraint("model_id", "grantee_kind", "grantee_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(
        ForeignKey("registered_models.id", ondelete="CASCADE"), index=True
    )
    grantee_kind: Mapped[str] = mapped_column(String(16))
    grantee_id: Mapped[int] = mapped_column(Integer)
    mode: Mapped[str] = mapped_column(String(8), default=ShareMode.READ.value)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class EvalState(StrEnum):
    QUEUED = "queued"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Evaluation(Base):
    __tablename__ = "model_evaluations"
    __table_args__ = ({"sqlite_autoincrement": True},)  # ids never reused: they name files

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    job_id: Mapped[int | None] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), default=EvalState.QUEUED.value)
    dataset: Mapped[str] = mapped_column(String(255), default="")
    dataset_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("dataset_versions.id", ondelete="SET NULL")
    )
    task: Mapped[str] = mapped_column(String(64), default="", server_default="")  # the report's
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    per_class: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    confusion: Mapped[list[list[int]]] = mapped_column(JSON, default=list)
    # the other plots the job drew (``<name>.png``), kept under MODEL_STORAGE/evaluations/<id>/
    plots: Mapped[list[str]] = mapped_column(JSON, default=list, server_default="[]")
    message: Mapped[str] = mapped_column(String(1000), default="")
    workdir: Mapped[str] = mapped_column(String(255), default="")
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
