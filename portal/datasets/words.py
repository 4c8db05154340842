"""What the dataset pages call sources and visibility, sizes in the reader's locale, and the
texts of the upload script (static/upload.js), which has none of its own."""

from __future__ import annotations

from typing import Any

from portal.i18n import gettext, number
from translations import N_

VISIBILITY = {
    "private": N_("Private"),
    "project": N_("Project"),
    "public": N_("Public"),
}
VISIBILITY_LONG = {
    "private": N_("Private (you and the platform admins)"),
    "project": N_("Project (everyone who can read the project)"),
    "public": N_("Public (every user of the portal)"),
}
SOURCE = {
    "upload": N_("Upload"),
    "path": N_("Cluster directory"),
    "s3": N_("Object store (S3)"),
    "labels": N_("Labelling export"),
    "workspace": N_("Workspace of jobs"),
}
GRANTEE = {"user": N_("User"), "project": N_("Project"), "domain": N_("Domain")}
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def visibility(value: str, long: bool = False) -> str:
    table = VISIBILITY_LONG if long else VISIBILITY
    return gettext(table[value]) if value in table else value


def source(value: str) -> str:
    return gettext(SOURCE[value]) if value in SOURCE else value


def grantee(value: str) -> str:
    return gettext(GRANTEE[value]) if value in GRANTEE else value


def size(n: int | None) -> str:
    """Bytes the way people read them (``1.5 MiB``), with the locale's separators."""
    if n is None:
        return number(None)
    value, unit = float(n), 0
    while value >= 1024 and unit < len(UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{number(value, 0 if unit == 0 else 1)} {UNITS[unit]}"


def no_file(path: str, version: int) -> str:
    return gettext("Version %(version)d has no file %(path)s.", version=version, path=path)


def upload_texts(limit: int) -> dict[str, Any]:
    """Everything the upload script shows while a form's files are sent; it fills in the
    ``%(name)s``, ``%(limit)s`` and ``%(percent)s`` placeholders itself."""
    return {
        "too_big": gettext("%(name)s is larger than the %(limit)s the portal accepts."),
        "sending": gettext("Sending: %(percent)s"),
        "checking": gettext("Sent. The portal is checking the files…"),
        "failed": gettext("The upload was interrupted. Try again."),
        "limit": limit,
        "limit_text": size(limit),
    }
