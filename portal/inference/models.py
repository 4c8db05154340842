"""Inference services and their replicas (one Slurm job each)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.extensions import Base
from portal.models import UTCDateTime, utcnow
from portal.registry.models import ModelVersion


class ServiceState(StrEnum):
    RUNNING = "running"  # replicas are wanted (some may still be starting)
    STOPPED = "stopped"
    EXPIRED = "expired"
    # deleted by its users (gone from the API); the reconciler cancels its replicas, removes
    # its directory, then its row
    DELETING = "deleting"


class Device(StrEnum):
    CPU = "cpu"
    FRACTION = "fraction"  # k/32 of a card (shards)
    GPU = "gpu"  # whole cards


class InferenceService(Base):
    __tablename__ = "inference_services"
    __table_args__ = (
        UniqueConstraint("project_id", "name"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default=ServiceState.RUNNING.value)
    device: Mapped[str] = mapped_column(String(16), default=Device.CPU.value)
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    shards: Mapped[int] = mapped_column(Integer, default=0)
    replicas: Mapped[int] = mapped_column(Integer, default=1)
    token_hash: Mapped[str] = mapped_column(String(64))
    token_hint: Mapped[str] = mapped_column(String(16))
    allow_ips: Mapped[list[str]] = mapped_column(JSON, default=list)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    calls: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    workdir: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    version: Mapped[ModelVersion] = relationship(lazy="joined")
    replica_rows: Mapped[list[Replica]] = relationship(
        lazy="selectin", cascade="all, delete-orphan", order_by="Replica.index"
    )

    @property
    def health(self) -> str:
        """What a user should read: ``failing`` while a replica crash-loops, ``ready`` when
        every wanted replica answers, ``starting`` before; else the state (stopped, …)."""
        if self.state != ServiceState.RUNNING:
            return self.state
        if any(r.failures and not r.url for r in self.replica_rows):
            return "failing"
        ready = sum(1 for r in self.replica_rows if r.url)
        return "ready" if ready >= self.replicas else "starting"

    @property
    def last_error(self) -> str:
        return next((r.last_error for r in self.replica_rows if r.last_error and not r.url), "")

    def audit_view(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version_id": self.version_id,
            "state": self.state,
            "device": self.device,
            "gpus": self.gpus,
            "shards": self.shards,
            "replicas": self.replicas,
            "allow_ips": list(self.allow_ips),
            "expires_at": self.expires_at,
        }


class Replica(Base):
    __tablename__ = "inference_replicas"
    __table_args__ = (
        UniqueConstraint("service_id", "index"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    service_id: Mapped[int] = mapped_column(
        ForeignKey("inference_services.id", ondelete="CASCADE"), index=True
    )
    index: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[int | None] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(String(255))
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    # consecutive failed runs; the next start waits until retry_at (exponential backoff)
    failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str] = mapped_column(String(1000), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
