"""Quota columns shared by domains and projects, and their Slurm TRES names."""

from __future__ import annotations

from sqlalchemy import Integer
from sqlalchemy.orm import Mapped, mapped_column

# quota field -> Slurm TRES (GrpTRES of the account)
TRES: dict[str, str] = {
    "gpus": "gres/gpu",
    "shards": "gres/shard",
    "npus": "gres/npu",
    "cpus": "cpu",
}


class QuotaColumns:
    """Group limits of a Slurm account; ``None`` means no limit."""

    gpus: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    shards: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    npus: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    cpus: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)

    def quota(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in TRES}

    def grp_tres(self) -> dict[str, int]:
        return {tres: v for name, tres in TRES.items() if (v := getattr(self, name)) is not None}
