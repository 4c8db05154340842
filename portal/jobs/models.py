"""Job history: what the portal submitted, kept so a job can be re-run as it was asked for."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from portal.extensions import Base
from portal.models import UTCDateTime, utcnow

FORM = "form"
SPEC = "spec"
#: the app a job launched, when it launched one: the portal proxies only its own Jupyter jobs
JUPYTER = "jupyter"


class JobRecord(Base):
    """One submission through the portal: the request as the caller sent it (form fields or
    a job spec), the Slurm job it became and, for a re-run, the job it repeated."""

    __tablename__ = "job_records"
    __table_args__ = (
        # the caller's history and a project's history, newest first, without a sort
        Index("ix_job_records_user_id_id", "user_id", "id"),
        Index("ix_job_records_project_id_id", "project_id", "id"),
        {"sqlite_autoincrement": True},  # ids never reused: they name files and jobs
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # not unique: a lab or a cluster that is rebuilt starts its job ids again
    job_id: Mapped[int] = mapped_column(Integer, index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(8))  # FORM or SPEC
    name: Mapped[str] = mapped_column(String(64))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    rerun_of: Mapped[int | None] = mapped_column(Integer, nullable=True)
    app: Mapped[str] = mapped_column(String(16), default="", server_default="")
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
