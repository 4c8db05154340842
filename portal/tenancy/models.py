"""Tenants: domains → projects, memberships, domain admins and user groups."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from portal.extensions import Base
from portal.identity.models import User
from portal.quotas.models import QuotaColumns
from portal.roles.models import Role


class Domain(QuotaColumns, Base):
    """A top-level tenant; a Slurm account under ``root``."""

    __tablename__ = "domains"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    description: Mapped[str] = mapped_column(String(255), default="")

    def audit_view(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description, **self.quota()}


class DomainAdmin(Base):
    __tablename__ = "domain_admins"
    __table_args__ = (UniqueConstraint("domain_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    user: Mapped[User] = relationship(lazy="joined")


class Project(QuotaColumns, Base):
    """A team or course inside a domain; a Slurm account whose parent is the domain's."""

    __tablename__ = "projects"
    __table_args__ = ({"sqlite_autoincrement": True},)  # ids never reused: they name files

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id"), index=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    description: Mapped[str] = mapped_column(String(255), default="")
    # QOS the project's members may use (comma-separated); the first is their default
    qos: Mapped[str] = mapped_column(String(255), default="normal,low")
    domain: Mapped[Domain] = relationship(lazy="joined")

    def qos_list(self) -> tuple[str, ...]:
        return tuple(q for q in self.qos.split(",") if q)

    def audit_view(self) -> dict[str, object]:
        return {
            "name": self.name,
            "domain_id": self.domain_id,
            "description": self.description,
            "qos": self.qos,
            **self.quota(),
        }


class Membership(Base):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("project_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role_id: Mapped[int] = mapped_column(ForeignKey("roles.id"))
    user: Mapped[User] = relationship(lazy="joined")
    role: Mapped[Role] = relationship(lazy="joined")

    def audit_view(self) -> dict[str, object]:
        return {"project_id": self.project_id, "user_id": self.user_id, "role_id": self.role_id}


class Group(Base):
    """A set of users of one domain, granted a role on some of the domain's projects."""

    __tablename__ = "user_groups"
    __table_args__ = (
        UniqueConstraint("domain_id", "name"),
        {"sqlite_autoincrement": True},
    )  # ids never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(255), default="")

    def audit_view(self) -> dict[str, object]:
        return {"domain_id": self.domain_id, "name": self.name, "description": self.description}


class GroupMember(Base):
    __tablename__ = "group_members"
    __table_args__ = (UniqueConstraint("group_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("user_groups.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    user: Mapped[User] = relationship(lazy="joined")


class GroupGrant(Base):
    __tablename__ = "group_grants"
    __table_args__ = (UniqueConstraint("group_id", "project_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("user_groups.id", ondelete="CASCADE"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    role_id: Mapped[int] = mapped_column(ForeignKey("roles.id"))
    role: Mapped[Role] = relationship(lazy="joined")
