"""The one rule for the names people give what they make: jobs, specs, models, datasets and
inference services.

A name is what a person reads, in their own script: ``训练-四分之一`` as well as
``resnet50-v2``. It is a letter or a digit, then letters, combining marks, digits, ``_``,
``.`` and ``-`` of any script; at most 64 characters and 255 bytes in UTF-8 (Slurm's
accounting database keeps a job name in a ``TINYTEXT``); not only digits (a spec's
dependencies name a job by its id or by its spec's name); in Unicode's composed form (NFC),
so two names that look the same are the same.

Nothing else: no spaces (a job name is a column of ``squeue`` and ``sacct`` and part of the
output file's name), no ``/`` or ``%`` (the output file's name is ``<name>-%j.out``), no
quotes, ``$`` or other punctuation, no control, format (bidirectional overrides, zero
widths) or line-breaking characters.

Where a name becomes a file name chosen by a user, an environment variable, a Slurm account
or a template's file, the narrower ASCII rules of :mod:`jobspec.fields` apply instead.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from marshmallow import ValidationError, validate

from translations import N_

MAX_NAME = 64
#: slurmdbd stores a job's name in a TINYTEXT column: 255 bytes
MAX_NAME_BYTES = 255
_PUNCTUATION = frozenset("_.-")

#: the rule in a sentence, as the portal's forms and API answer a refused name
NAME_RULE = N_(
    "A letter or digit first, then letters, digits, '_', '.' or '-' of any script "
    "(at most 64 characters, not only digits)."
)
#: the same rule as jobspec's hints say it (``'x y' is not allowed: <hint>``)
NAME_HINT = N_(
    "use a letter or digit first, then letters, digits, '_', '.' or '-' of any script "
    "(at most 64 characters, not only digits)"
)


def _letter_or_digit(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] == "L" or cat == "Nd"


def is_name(value: Any) -> bool:
    """Whether ``value`` is a name by the rule above."""
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        return False
    try:
        if len(value.encode("utf-8")) > MAX_NAME_BYTES:
            return False
    except UnicodeEncodeError:  # a lone surrogate
        return False
    if not _letter_or_digit(value[0]):
        return False
    for ch in value[1:]:
        if not (ch in _PUNCTUATION or _letter_or_digit(ch) or unicodedata.category(ch)[0] == "M"):
            return False
    if all(unicodedata.category(ch) == "Nd" for ch in value):
        return False
    return unicodedata.is_normalized("NFC", value)


#: what the API's document says of a name (OpenAPI's ``pattern``): a part of the rule that a
#: regular expression of both ECMAScript and Python can state (Latin letters, digits and CJK
#: ideographs), so that every name it matches is one. The rule itself, checked on the
#: server, admits the letters of every script.
DOCUMENTED = re.compile(r"^(?![0-9]+$)[A-Za-z0-9\u4e00-\u9fff][A-Za-z0-9\u4e00-\u9fff_.-]{0,63}$")


class Name(validate.Validator):
    """The rule as a marshmallow validator (the portal's schemas); the message is
    :data:`NAME_RULE`, translated where the portal answers. ``regex`` is what apispec writes
    as the field's ``pattern`` (:data:`DOCUMENTED`)."""

    error = NAME_RULE
    regex = DOCUMENTED

    def __call__(self, value: Any) -> Any:
        if not is_name(value):
            raise ValidationError(self.error)
        return value
