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
from portal.datasets.models import GranteeKind, Source, Visibility
from portal.datasets.service import Settings
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l


class DatasetForm(FlaskForm):
    project_id = SelectField(_l("Project"), coerce=int)
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=64)])
    description = StringField(_l("Description"), validators=[Length(max=255)])
    visibility = SelectField(_l("Visibility"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.visibility.choices = visibility_choices()


class SettingsForm(FlaskForm):
    description = StringField(_l("Description"), validators=[Length(max=255)])
    visibility = SelectField(_l("Visibility"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.visibility.choices = visibility_choices()


class UploadForm(FlaskForm):
    files = MultipleFileField(_l("Files"))
    extract = BooleanField(_l("Unpack zip and tar archives"), default=True)
    keep_previous = BooleanField(_l("Start from the previous version's files"))
    note = StringField(_l("Note"), validators=[Length(max=255)])


class ImportForm(FlaskForm):
    source = RadioField(_l("From"), default=Source.PATH.value)
    path = StringField(_l("Directory on the cluster"), validators=[Length(max=1024)])
    store = SelectField(_l("Object store"), validate_choice=False)
    bucket = StringField(_l("Bucket"), validators=[Length(max=63)])
    prefix = StringField(_l("Prefix (folder) in the bucket"), validators=[Length(max=512)])
    access_key = StringField(
        _l("Access key (empty: the store's own)"), validators=[Length(max=128)]
    )
    secret_key = PasswordField(_l("Secret key"), validators=[Length(max=256)])
    note = StringField(_l("Note"), validators=[Length(max=255)])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        sources = [Source.PATH, Source.S3, Source.WORKSPACE]
        self.source.choices = [(s.value, words.source(s.value)) for s in sources]
        self.store.choices = [(name, name) for name in Settings.current().s3_stores]


class ShareForm(FlaskForm):
    grantee_kind = SelectField(_l("Share with"))
    grantee = StringField(
        _l("Name of the user, project or domain"), validators=[DataRequired(), Length(max=64)]
    )
    expires = DateField(_l("Until the end of (empty: no end)"), validators=[Optional()])

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
