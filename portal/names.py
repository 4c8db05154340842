"""The name rule of :mod:`jobspec.names` for the portal's forms (WTForms); its schemas use
:class:`jobspec.names.Name`."""

from __future__ import annotations

from typing import Any

from wtforms.validators import ValidationError

from jobspec.names import NAME_RULE, is_name
from portal.i18n import gettext


class NameRule:
    """A form field that holds a job's, model's, dataset's or service's name."""

    def __call__(self, form: Any, field: Any) -> None:
        if field.data and not is_name(field.data):
            raise ValidationError(gettext(NAME_RULE))
