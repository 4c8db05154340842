"""Users and their API tokens."""

from __future__ import annotations

from datetime import datetime

from flask_login import UserMixin
from sqlalchemy import Boolean, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from portal.extensions import Base
from portal.models import UTCDateTime, utcnow


class User(UserMixin, Base):
    __tablename__ = "users"
    __table_args__ = ({"sqlite_autoincrement": True},)  # ids never reused: they name files

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # also the Unix and Slurm user name: jobs run as this user
    username: Mapped[str] = mapped_column(String(32), unique=True, index=True)
    display_name: Mapped[str] = mapped_column(String(120), default="")
    email: Mapped[str] = mapped_column(String(254), default="")
    password_hash: Mapped[str] = mapped_column(String(255))
    is_platform_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    password_changed_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # bumped on password change / reset: sessions made before it are refused
    session_epoch: Mapped[int] = mapped_column(Integer, default=0)
    # the portal's language for this user (portal.i18n.LOCALES); None: the browser's
    language: Mapped[str | None] = mapped_column(String(8), nullable=True, default=None)
    # the domain the account was made in: its admins may manage it while the user belongs to
    # none other (portal.identity.admin); None: platform admins only. No foreign key (a domain
    # that goes clears it, portal.tenancy.service.delete_domain): adding one to SQLite's users
    # table would copy the table, and its drop would cascade to the user's rows
    home_domain_id: Mapped[int | None] = mapped_column(
        Integer, nullable=True, index=True, default=None
    )

    @property
    def is_active(self) -> bool:
        return self.active

    def get_id(self) -> str:
        return f"{self.id}:{self.session_epoch}"

    def audit_view(self) -> dict[str, object]:
        return {
            "username": self.username,
            "display_name": self.display_name,
            "email": self.email,
            "is_platform_admin": self.is_platform_admin,
            "active": self.active,
        }


class WebSession(Base):
    """A signed-in browser: the cookie carries a random secret, the server keeps its hash, so
    signing out (or a password change, a reset, deactivation) ends it whatever the cookie says."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    prefix: Mapped[str] = mapped_column(String(16))  # shown in lists, never the secret
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)  # sha256
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    def audit_view(self) -> dict[str, object]:
        return {"user_id": self.user_id, "name": self.name, "prefix": self.prefix}
