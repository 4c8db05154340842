"""Roles and permissions in words, in the reader's language: the built-in roles' names and
descriptions (stored in English, translated where shown) and what each permission allows."""

from __future__ import annotations

from typing import Protocol

from portal.authz import GRANTABLE, MEANING, Perm
from portal.i18n import gettext
from translations import N_

#: The built-in roles' names as a person reads them (custom roles keep the name given).
BUILTIN_NAMES = {
    "member": N_("Member"),
    "manager": N_("Project admin"),
    "viewer": N_("Viewer"),
}


class _Role(Protocol):
    name: str
    description: str
    builtin: bool


def role_name(role: _Role) -> str:
    """A role's name in the reader's language (a built-in one's), else as given."""
    if role.builtin and role.name in BUILTIN_NAMES:
        return gettext(BUILTIN_NAMES[role.name])
    return role.name


def role_description(role: _Role) -> str:
    """A built-in role's description in the reader's language; a custom one's as written."""
    return gettext(role.description) if role.builtin and role.description else role.description


def permission_text(name: str) -> str:
    """What a permission (by its stored name) allows, in words; unknown names as they are."""
    try:
        return gettext(MEANING[Perm(name)])
    except (ValueError, KeyError):
        return name


def grantable() -> list[tuple[str, str]]:
    """The permissions a role may hold, each with its meaning, in a stable order."""
    order = [p for p in Perm if p in GRANTABLE]
    return [(p.value, gettext(MEANING[p])) for p in order]
