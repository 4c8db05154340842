"""The model page's forms: upload a version, import one from the mirror or an import root,
share the model with a user, a project or a domain until a day (the handlers are in
:mod:`portal.registry.pages`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import current_app
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import DateField, SelectField, StringField
from wtforms.validators import DataRequired, Length, Optional

from portal.datasets import shares
from portal.datasets import words as data_words
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l
from portal.registry import storage, words
from portal.registry.models import ModelShare, ShareMode
from portal.sharing import GranteeKind
from portal.web import session

LAYOUTS = ("config.json", "configuration.json", "README.md")  # what import_version accepts


class UploadForm(FlaskForm):
    file = FileField(
        _l("Model file or archive (.tar, .tar.gz, .zip)"),
        validators=[FileRequired()],
        id="upload-file",
    )


class ImportForm(FlaskForm):
    path = StringField(
        _l("Directory"), validators=[DataRequired(), Length(max=1024)], id="import-path"
    )


class ShareForm(FlaskForm):
    grantee_kind = SelectField(_l("Share with"), id="share-kind")
    grantee = StringField(
        _l("Name of the user, project or domain"),
        validators=[DataRequired(), Length(max=64)],
        id="share-grantee",
    )
    mode = SelectField(_l("Access"), id="share-mode")
    expires = DateField(
        _l("Until the end of (empty: no end)"), validators=[Optional()], id="share-expires"
    )


def share_choices(form: ShareForm) -> ShareForm:
    form.grantee_kind.choices = [(k.value, words.grantee(k.value)) for k in GranteeKind]
    form.mode.choices = [(m.value, words.share_mode(m.value)) for m in ShareMode]
    return form


def page_forms(given: dict[str, Any]) -> dict[str, Any]:
    """The forms of the model's page (those given keep what was typed and their errors)."""
    limit = int(current_app.config["MODEL_UPLOAD_MAX_BYTES"])
    return {
        "upload_form": given.get("upload_form") or UploadForm(formdata=None),
        "import_form": given.get("import_form") or ImportForm(formdata=None),
        "share_form": given.get("share_form") or share_choices(ShareForm(formdata=None)),
        "upload_limit": limit,
        "upload_texts": data_words.upload_texts(limit),
        "mirror_dirs": mirror_dirs(),
        "import_roots": [str(p) for p in current_app.config["MODEL_IMPORT_ROOTS"]],
    }


def mirror_dirs(depth: int = 2) -> list[str]:
    """Model directories in the site's mirror (``org/name``, as hubs lay them out) that an
    import accepts, for the import form to offer."""
    root = storage.mirror()
    if not root.is_dir():
        return []
    found: list[str] = []
    level = [root]
    for _ in range(depth):
        level = sorted(d for parent in level for d in parent.iterdir() if _visible_dir(d))
        found += [str(d) for d in level if any((d / name).is_file() for name in LAYOUTS)]
    return sorted(found)[:200]


def _visible_dir(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith(".") and not path.is_symlink()


def grantee_name(share: ModelShare) -> str:
    name = shares.grantee_name(session(), share.grantee_kind, share.grantee_id)
    return name if name is not None else gettext("(deleted)")


def grantee_id(kind: GranteeKind, name: str) -> int:
    """The id of the user, project or domain of that name (a message on the field if none)."""
    return shares.grantee_id(session(), kind.value, name)
