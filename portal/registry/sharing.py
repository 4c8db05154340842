"""Aliases and shares of registered models (who else may use a model, and until when)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from portal.authz import Access
from portal.clock import now
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.identity.models import User
from portal.registry.access import Level
from portal.registry.models import (
    ModelAlias,
    ModelShare,
    ModelVersion,
    RegisteredModel,
)
from portal.registry.service import audit_model, get_model, get_version, protect
from portal.sharing import GranteeKind
from portal.tenancy.models import Domain, Project
from translations import N_


# ---------------------------------------------------------------------- aliases
def aliases(session: Session, model: RegisteredModel) -> dict[str, int]:
    rows = session.execute(
        select(ModelAlias.alias, ModelVersion.number)
        .join(ModelVersion, ModelVersion.id == ModelAlias.version_id)
        .where(ModelAlias.model_id == model.id)
    )
    return {str(alias): int(number) for alias, number in rows}


def set_alias(
    session: Session, access: Access, model_id: int, alias: str, number: int
) -> ModelVersion:
    version = get_version(session, access, model_id, number, Level.WRITE)
    row = session.scalar(
        select(ModelAlias).where(ModelAlias.model_id == model_id, ModelAlias.alias == alias)
    )
    if row is None:
        session.add(ModelAlias(model_id=model_id, alias=alias, version_id=version.id))
    else:
        row.version_id = version.id
    audit_model(
        session, access, "model.alias.set", version.model, after={"alias": alias, "number": number}
    )
    session.commit()
    return version


def delete_alias(session: Session, access: Access, model_id: int, alias: str) -> None:
    model, _ = get_model(session, access, model_id, Level.WRITE)
    row = session.scalar(
        select(ModelAlias).where(ModelAlias.model_id == model_id, ModelAlias.alias == alias)
    )
    if row is None:
        raise NotFound(no_alias(model.name, alias))
    session.delete(row)
    audit_model(session, access, "model.alias.delete", model, before={"alias": alias})
    session.commit()


def resolve_alias(session: Session, access: Access, model_id: int, alias: str) -> ModelVersion:
    model, _ = get_model(session, access, model_id, Level.READ)
    version = session.scalar(
        select(ModelVersion)
        .join(ModelAlias, ModelAlias.version_id == ModelVersion.id)
        .where(ModelAlias.model_id == model.id, ModelAlias.alias == alias)
    )
    if version is None:
        raise NotFound(no_alias(model.name, alias))
    return version


def no_alias(model: str, alias: str) -> str:
    return gettext("Model %(name)s has no alias %(alias)s.", name=model, alias=alias)


# ---------------------------------------------------------------------- shares
def shares(session: Session, access: Access, model_id: int) -> list[ModelShare]:
    model, _ = get_model(session, access, model_id, Level.ADMIN)
    return list(session.scalars(select(ModelShare).where(ModelShare.model_id == model.id)))


NO_GRANTEE = {
    GranteeKind.USER: N_("There is no user with the id %(id)d."),
    GranteeKind.PROJECT: N_("There is no project with the id %(id)d."),
    GranteeKind.DOMAIN: N_("There is no domain with the id %(id)d."),
}


def _check_grantee(session: Session, kind: str, grantee_id: int) -> None:
    table = {GranteeKind.USER: User, GranteeKind.PROJECT: Project, GranteeKind.DOMAIN: Domain}
    if session.get(table[GranteeKind(kind)], grantee_id) is None:
        message = gettext(NO_GRANTEE[GranteeKind(kind)], id=grantee_id)
        raise ValidationFailed({"grantee_id": [message]})


def share(session: Session, access: Access, model_id: int, data: Mapping[str, Any]) -> ModelShare:
    model, _ = get_model(session, access, model_id, Level.ADMIN)
    _check_grantee(session, data["grantee_kind"], data["grantee_id"])
    expires: datetime | None = data.get("expires_at")
    if expires is not None and expires <= now():
        message = gettext("The expiry must be in the future (or left out: no expiry).")
        raise ValidationFailed({"expires_at": [message]})
    row = session.scalar(
        select(ModelShare).where(
            ModelShare.model_id == model.id,
            ModelShare.grantee_kind == data["grantee_kind"],
            ModelShare.grantee_id == data["grantee_id"],
        )
    )
    if row is None:
        row = ModelShare(
            model_id=model.id,
            grantee_kind=data["grantee_kind"],
            grantee_id=data["grantee_id"],
            created_by=access.user_id,
        )
        session.add(row)
    row.mode = data.get("mode", "read")
    row.expires_at = expires
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict(gettext("The share changed meanwhile. Try again.")) from None
    protect(session, model)
    audit_model(
        session,
        access,
        "model.share",
        model,
        after={
            "grantee_kind": row.grantee_kind,
            "grantee_id": row.grantee_id,
            "mode": row.mode,
            "expires_at": row.expires_at,
        },
    )
    session.commit()
    return row


def unshare(session: Session, access: Access, model_id: int, share_id: int) -> None:
    model, _ = get_model(session, access, model_id, Level.ADMIN)
    row = session.get(ModelShare, share_id)
    if row is None or row.model_id != model.id:
        raise NotFound(gettext("Share not found."))
    audit_model(
        session,
        access,
        "model.unshare",
        model,
        before={"grantee_kind": row.grantee_kind, "grantee_id": row.grantee_id},
    )
    session.delete(row)
    session.commit()
