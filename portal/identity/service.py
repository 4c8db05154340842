"""Users, passwords (argon2) and API tokens (random secrets, stored as SHA-256)."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import CompoundSelect, Select, delete, select, union
from sqlalchemy.orm import Session

from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import ApiToken, User, WebSession
from portal.models import utcnow
from portal.tenancy.models import (
    DomainAdmin,
    Group,
    GroupGrant,
    GroupMember,
    Membership,
    Project,
)
from translations import N_

USERNAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
TOKEN_PREFIX = "aip_"  # noqa: S105 - a marker, not a secret
_hasher = PasswordHasher()
_DUMMY_HASH = _hasher.hash("not a password of anyone")


# ---------------------------------------------------------------------- passwords
def hash_password(password: str) -> str:
    return _hasher.hash(password)


MIN_STRENGTH = 2  # zxcvbn's score, 0-4: 0 and 1 are common passwords and their near variants


def check_password_rules(
    password: str, min_length: int, field: str = "password", *, user_inputs: tuple[str, ...] = ()
) -> None:
    """Length, then zxcvbn's guessability estimate (its lists of common passwords, names and
    words, keyboard patterns, dates, and the user's own name and address)."""
    from zxcvbn import zxcvbn

    if len(password) < min_length:
        raise ValidationFailed({field: [gettext("At least %(n)d characters.", n=min_length)]})
    if len(password) > 1024:
        raise ValidationFailed({field: [gettext("At most 1024 characters.")]})
    verdict = zxcvbn(password[:100], user_inputs=[x for x in user_inputs if x])
    if verdict["score"] < MIN_STRENGTH:
        warning = verdict["feedback"]["warning"]
        why = gettext(warning) if warning in GUESSABLE else gettext("It is easy to guess.")
        raise ValidationFailed(
            {field: [gettext("Too easy to guess: %(why)s Choose another.", why=why)]}
        )


# zxcvbn's reasons (its feedback warnings), in the catalogue so that users read them in theirs
GUESSABLE = frozenset(
    {
        N_("This is a top-10 common password."),
        N_("This is a top-100 common password."),
        N_("This is a very common password."),
        N_("This is similar to a commonly used password."),
        N_("A word by itself is easy to guess."),
        N_("Names and surnames by themselves are easy to guess."),
        N_("Common names and surnames are easy to guess."),
        N_("Straight rows of keys are easy to guess."),
        N_("Short keyboard patterns are easy to guess."),
        N_('Repeats like "aaa" are easy to guess.'),
        N_('Sequences like "abc" or "6543" are easy to guess.'),
        N_("Recent years are easy to guess."),
        N_("Dates are often easy to guess."),
    }
)


def password_inputs(user: User) -> tuple[str, ...]:
    return (user.username, user.display_name, user.email)


def authenticate(session: Session, username: str, password: str) -> User | None:
    """The active user with this password, else ``None`` (same work either way)."""
    user: User | None = session.scalar(select(User).where(User.username == username))
    try:
        _hasher.verify(user.password_hash if user else _DUMMY_HASH, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    if user is None or not user.active:
        return None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
        session.commit()
    return user


def change_password(
    session: Session, user: User, current: str, new: str, *, min_length: int
) -> None:
    try:
        _hasher.verify(user.password_hash, current)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        raise Forbidden(gettext("The current password is wrong.")) from None
    check_password_rules(new, min_length, "new_password", user_inputs=password_inputs(user))
    set_password(session, user, new)
    record(session, user, "user.password_change", "user", user.id)
    session.commit()


def set_password(session: Session, user: User, password: str) -> None:
    user.password_hash = hash_password(password)
    user.password_changed_at = utcnow()
    end_sessions(session, user)


# ---------------------------------------------------------------------- sessions
def open_session(session: Session, user: User, *, max_age: timedelta) -> str:
    """A new signed-in browser of ``user``; returns the secret its cookie carries. Sessions of
    anyone older than ``max_age`` go at the same time."""
    session.execute(delete(WebSession).where(WebSession.created_at < utcnow() - max_age))
    secret = secrets.token_urlsafe(32)
    session.add(WebSession(user_id=user.id, secret_hash=_digest(secret)))
    session.commit()
    return secret


def session_user(session: Session, user_id: int, secret: str, *, max_age: timedelta) -> User | None:
    """The active user whose browser session this is, else ``None``."""
    row = session.scalar(select(WebSession).where(WebSession.secret_hash == _digest(secret)))
    if row is None or row.user_id != user_id or row.created_at < utcnow() - max_age:
        return None
    user = session.get(User, user_id)
    return user if user is not None and user.active else None


def close_session(session: Session, secret: str) -> None:
    session.execute(delete(WebSession).where(WebSession.secret_hash == _digest(secret)))
    session.commit()


def end_sessions(session: Session, user: User) -> None:
    """End every browser session and API token of ``user`` (not committed)."""
    user.session_epoch += 1
    session.execute(delete(WebSession).where(WebSession.user_id == user.id))
    session.execute(delete(ApiToken).where(ApiToken.user_id == user.id))


# ---------------------------------------------------------------------- users
def _get(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(gettext("No such user."))
    return user


def visible_user_ids(access: Access) -> CompoundSelect[int] | None:
    """Users the caller may see: themselves and the members of projects whose members they
    may read (directly or through groups); ``None`` for everyone."""
    if access.platform_admin:
        return None
    readable = [pid for pid, perms in access.grants.items() if Perm.MEMBERS_READ in perms]
    projects = select(Project.id).where(
        Project.id.in_(readable) | Project.domain_id.in_(access.admin_of)
    )
    return union(
        select(User.id).where(User.id == access.user_id),
        select(Membership.user_id).where(Membership.project_id.in_(projects)),
        select(GroupMember.user_id)
        .join(GroupGrant, GroupGrant.group_id == GroupMember.group_id)
        .where(GroupGrant.project_id.in_(projects)),
        select(GroupMember.user_id)
        .join(Group, Group.id == GroupMember.group_id)
        .where(Group.domain_id.in_(access.admin_of)),
        select(DomainAdmin.user_id).where(DomainAdmin.domain_id.in_(access.admin_of)),
    )


def users_query(access: Access, q: str | None = None) -> Select[User]:
    stmt = select(User).order_by(User.username)
    ids = visible_user_ids(access)
    if ids is not None:
        stmt = stmt.where(User.id.in_(ids))
    if q:
        stmt = stmt.where(
            User.username.contains(q, autoescape=True)
            | User.display_name.contains(q, autoescape=True)
            | User.email.contains(q, autoescape=True)
        )
    return stmt


def get_user(session: Session, access: Access, user_id: int) -> User:
    user: User | None = session.scalar(users_query(access).where(User.id == user_id))
    if user is None:
        raise NotFound(gettext("No such user."))
    return user


def user_by_name(session: Session, username: str) -> User:
    user: User | None = session.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(gettext("No user %(name)s.", name=username))
    return user


# ---------------------------------------------------------------------- tokens
def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(
    session: Session, user: User, name: str, *, days: int | None
) -> tuple[ApiToken, str]:
    """A new token; the secret is returned once and only its hash is kept."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires = datetime.now(UTC) + timedelta(days=days) if days else None
    token = ApiToken(
        user_id=user.id,
        name=name,
        prefix=secret[:10],
        token_hash=_digest(secret),
        expires_at=expires,
    )
    session.add(token)
    session.flush()
    record(session, user, "token.create", "api_token", token.id, after=token.audit_view())
    session.commit()
    return token, secret


def tokens_query(user: User) -> Select[ApiToken]:
    return select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id)


def revoke_token(session: Session, user: User, token_id: int) -> None:
    token = session.get(ApiToken, token_id)
    if token is None or token.user_id != user.id:
        raise NotFound(gettext("No such token."))
    record(session, user, "token.revoke", "api_token", token.id, before=token.audit_view())
    session.delete(token)
    session.commit()


def user_for_token(session: Session, secret: str) -> User | None:
    if not secret.startswith(TOKEN_PREFIX):
        return None
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == _digest(secret)))
    now = datetime.now(UTC)
    if token is None or (token.expires_at is not None and token.expires_at <= now):
        return None
    user = session.get(User, token.user_id)
    if user is None or not user.active:
        return None
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        token.last_used_at = now  # not on every call: a write per request would cost more
        session.commit()
    return user
