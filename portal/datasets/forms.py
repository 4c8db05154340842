"""The dataset pages' forms: a new dataset, its settings, a new version from uploaded files or
from a cluster directory or an object store (S3), and a share. The handlers are in
:mod:`portal.datasets.pages`."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    DateField,
    MultipleFileField,
    PasswordField,
    RadioField,
    SelectField,
    StringField,
)
from wtforms.validators import DataRequired, Length, Optional

from portal.datasets import words
from portal.datasets.models import Source, Visibility
from portal.datasets.service import Settings
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l
from portal.names import NameRule
from portal.sharing import GranteeKind


class DatasetForm(FlaskForm):
    project_id = SelectField(_l("Project"), coerce=int)
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=64), NameRule()])
    description = StringField(_l("Description"), validators=[Length(max=255)])
    visibility = SelectField(_l("Visibility"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.visibility.choices = visibility_choices()


class SettingsForm(FlaskForm):
    description = StringField(
        _l("Description"), validators=[Length(max=255)], id="settings-description"
    )
    visibility = SelectField(_l("Visibility"), id="settings-visibility")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.visibility.choices = visibility_choices()


class UploadForm(FlaskForm):
    files = MultipleFileField(_l("Files"), id="upload-files")
    extract = BooleanField(_l("Unpack zip and tar archives"), default=True, id="upload-extract")
    keep_previous = BooleanField(_l("Start from the previous version's files"), id="keep-previous")
    note = StringField(_l("Note"), validators=[Length(max=255)], id="upload-note")


class ImportForm(FlaskForm):
    source = RadioField(_l("From"), default=Source.PATH.value, id="import-source")
    path = StringField(_l("Directory on the cluster"), [Length(max=1024)], id="import-path")
    store = SelectField(_l("Object store"), validate_choice=False, id="import-store")
    bucket = StringField(_l("Bucket"), [Length(max=63)], id="import-bucket")
    prefix = StringField(_l("Prefix (folder) in the bucket"), [Length(max=512)], id="import-prefix")
    access_key = StringField(
        _l("Access key (empty: the store's own)"), [Length(max=128)], id="import-access-key"
    )
    secret_key = PasswordField(_l("Secret key"), [Length(max=256)], id="import-secret-key")
    note = StringField(_l("Note"), [Length(max=255)], id="import-note")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sources = [Source.PATH, Source.S3, Source.WORKSPACE]
        self.source.choices = [(s.value, words.source(s.value)) for s in sources]
        self.store.choices = [(name, name) for name in Settings.current().s3_stores]


class ShareForm(FlaskForm):
    grantee_kind = SelectField(_l("Share with"), id="share-kind")
    grantee = StringField(
        _l("Name of the user, project or domain"),
        validators=[DataRequired(), Length(max=64)],
        id="share-grantee",
    )
    expires = DateField(
        _l("Until the end of (empty: no end)"), validators=[Optional()], id="share-expires"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.grantee_kind.choices = [(k.value, words.grantee(k.value)) for k in GranteeKind]


def visibility_choices() -> list[tuple[str, str]]:
    return [(v.value, words.visibility(v.value, long=True)) for v in Visibility]


def page_forms(ds: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The forms of a dataset's page (those given keep what was typed and their errors)."""
    limit = int(current_app.config["DATASET_MAX_FILE_BYTES"])
    settings = given.get("settings_form") or SettingsForm(
        formdata=None, description=ds.description, visibility=ds.visibility
    )
    return {
        "upload_form": given.get("upload_form") or UploadForm(formdata=None),
        "import_form": given.get("import_form") or ImportForm(formdata=None),
        "settings_form": settings,
        "share_form": given.get("share_form") or ShareForm(formdata=None),
        "upload_texts": words.upload_texts(limit),
        "upload_limit": limit,
        "import_roots": Settings.current().import_roots,
        "no_store": gettext("No object store is configured on this site."),
    }
