"""Who may do what with a registered model: visibility, shares (with expiry) and project
roles, resolved per request against the injected clock.

Levels: ``read`` (see the model, its versions and evaluations, use it in one's own jobs),
``write`` (add versions, evaluate, tag, edit), ``admin`` (share, change visibility, delete).
An expired share grants nothing from the instant it expires: every check compares with the
current time, nothing is cached across requests.
"""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from sqlalchemy import ColumnElement, and_, exists, false, or_, select, true
from sqlalchemy.orm import Session

from portal.authz import Access, Perm
from portal.errors import Forbidden, NotFound
from portal.i18n import gettext
from portal.registry.models import (
    ModelShare,
    RegisteredModel,
    ShareMode,
    Visibility,
)
from portal.sharing import GranteeKind, domains, now, reach_filter, reaches, seen_projects
from portal.tenancy.models import Project
from translations import N_


class Level(IntEnum):
    NONE = 0
    READ = 1
    WRITE = 2
    ADMIN = 3


def _readable_projects(access: Access) -> list[int]:
    return sorted(seen_projects(access))


def _share_applies(access: Access, share: ModelShare, at: datetime) -> bool:
    return reaches(access, share.grantee_kind, share.grantee_id, share.expires_at, at)


def level(session: Session, access: Access, model: RegisteredModel) -> Level:
    if access.platform_admin:
        return Level.ADMIN
    project = model.project
    perms = access.on_project(project)
    if model.owner_id == access.user_id or Perm.PROJECT_MANAGE in perms:
        return Level.ADMIN
    best = Level.NONE
    vis = model.visibility
    in_domain = project.domain_id in domains(access)
    if vis == Visibility.PUBLIC or (vis == Visibility.DOMAIN and in_domain):
        best = Level.READ
    elif vis == Visibility.PROJECT and Perm.PROJECT_READ in perms:
        # members who run jobs in the project may also add versions to its shared models
        best = Level.WRITE if Perm.JOBS_SUBMIT in perms else Level.READ
    at = now()
    for share in session.scalars(select(ModelShare).where(ModelShare.model_id == model.id)):
        if _share_applies(access, share, at):
            best = max(best, Level.WRITE if share.mode == ShareMode.WRITE else Level.READ)
    return best


def require(session: Session, access: Access, model: RegisteredModel | None, need: Level) -> Level:
    """The caller's level on ``model``; invisible models are not found, visible ones that the
    caller may not change are forbidden."""
    if model is None:
        raise NotFound(gettext("Model not found."))
    have = level(session, access, model)
    if have == Level.NONE:
        raise NotFound(gettext("Model not found."))
    if have < need:
        raise Forbidden(
            gettext(
                "This needs %(level)s access to model %(name)s.",
                level=gettext(NEEDED[need]),
                name=model.name,
            )
        )
    return have


NEEDED = {
    Level.READ: N_("read"),
    Level.WRITE: N_("write"),
    Level.ADMIN: N_("admin"),
}


def visible_filter(access: Access) -> ColumnElement[bool]:
    """SQL condition on :class:`RegisteredModel` (joined with :class:`Project`) for lists."""
    if access.platform_admin:
        return true()
    at = now()
    managed = [p for p, perms in access.grants.items() if Perm.PROJECT_MANAGE in perms]
    readable = _readable_projects(access)
    tenants = domains(access)
    shared = exists().where(
        ModelShare.model_id == RegisteredModel.id,
        reach_filter(
            access, at, ModelShare.grantee_kind, ModelShare.grantee_id, ModelShare.expires_at
        ),
    )
    return or_(
        RegisteredModel.owner_id == access.user_id,
        RegisteredModel.visibility == Visibility.PUBLIC.value,
        Project.domain_id.in_(access.admin_of) if access.admin_of else false(),
        RegisteredModel.project_id.in_(managed) if managed else false(),
        and_(
            RegisteredModel.visibility == Visibility.PROJECT.value,
            RegisteredModel.project_id.in_(readable),
        )
        if readable
        else false(),
        and_(RegisteredModel.visibility == Visibility.DOMAIN.value, Project.domain_id.in_(tenants))
        if tenants
        else false(),
        shared,
    )


def crosses_tenants(session: Session, model: RegisteredModel) -> bool:
    """Whether anyone outside the model's tenant (domain) can reach it: then its artifacts are
    kept encrypted with the tenant's key."""
    if model.visibility == Visibility.PUBLIC:
        return True
    home = model.project.domain_id
    for share in session.scalars(select(ModelShare).where(ModelShare.model_id == model.id)):
        if share.grantee_kind == GranteeKind.DOMAIN and share.grantee_id != home:
            return True
        if share.grantee_kind == GranteeKind.PROJECT:
            project = session.get(Project, share.grantee_id)
            if project is None or project.domain_id != home:
                return True
        if share.grantee_kind == GranteeKind.USER and not _user_in_domain(
            session, share.grantee_id, home
        ):
            return True
    return False


def _user_in_domain(session: Session, user_id: int, domain_id: int) -> bool:
    from portal.authz import load_access
    from portal.identity.models import User

    user = session.get(User, user_id)
    if user is None:
        return False
    other = load_access(session, user)
    return (domain_id in domains(other) and not other.platform_admin) or other.platform_admin
