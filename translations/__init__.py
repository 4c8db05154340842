"""The one message catalogue of everything a person reads: the portal's pages, forms and API
errors, e-mails, reports and job specs' errors. English is the source language; Simplified
Chinese lives in ``zh_Hans_CN/LC_MESSAGES/messages.po`` (compiled to ``messages.mo`` beside it;
the directory has Babel's full name of ``zh_CN``, script included, which is what it looks for).

The portal reads it through Flask-Babel (:mod:`portal.i18n`); packages without Flask
(accounting's reports and e-mails, the daemons' notices, jobspec) call :func:`gettext` with
the reader's locale. Strings that must be translated later, where they are made, are marked
with :func:`N_` so that extraction finds them. ``scripts/i18n.py`` extracts, updates,
compiles and checks the catalogue (docs/i18n.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from babel import Locale
from babel.support import NullTranslations, Translations

DIRECTORY = Path(__file__).resolve().parent
#: Every language the product speaks, each named in itself; ``en`` is the source language
#: (no catalogue of its own).
LOCALES: dict[str, str] = {"zh_CN": "简体中文", "en": "English"}
DEFAULT = "en"


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue without translating it (translated where shown)."""
    return message


@cache
def catalogue(locale: str | None) -> NullTranslations:
    """The compiled messages of ``locale``; none (the English source) for ``en`` or unknown."""
    if not locale or locale == DEFAULT or locale not in LOCALES:
        return NullTranslations()
    return Translations.load(str(DIRECTORY), [Locale.parse(locale)])


def gettext(locale: str | None, message: str, **params: Any) -> str:
    """``message`` in ``locale``, with ``%(name)s`` placeholders filled from ``params``."""
    text = catalogue(locale).gettext(message)
    return text % params if params else text


def ngettext(locale: str | None, singular: str, plural: str, n: int, **params: Any) -> str:
    """The singular or plural form for ``n`` in ``locale``; ``num`` is ``n`` in ``params``."""
    text = catalogue(locale).ngettext(singular, plural, n)
    return text % {"num": n, **params}


@dataclass(frozen=True, slots=True)
class Message:
    """A sentence whose reader is not known where it is made: its msgid (marked with
    :func:`N_`) and its values, carried to where it is shown. ``str()`` is the English; an
    error or a notice that carries one is translated by whoever knows the reader.

    The values are kept as text pairs, so the message travels as JSON (the daemons' state and
    notification files) and compares by value."""

    msgid: str
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, msgid: str, **params: Any) -> Message:
        return cls(msgid, tuple((k, str(v)) for k, v in params.items()))

    def render(self, locale: str | None) -> str:
        """The message in ``locale`` (English for ``en`` or an unknown locale)."""
        return gettext(locale, self.msgid, **dict(self.params))

    def __str__(self) -> str:
        return self.render(DEFAULT)


def translate(locale: str | None, text: object) -> str:
    """A :class:`Message` or a marked string (a msgid) in ``locale``; other text as it is."""
    if isinstance(text, Message):
        return text.render(locale)
    return catalogue(locale).gettext(str(text))


def normalise(locale: str | None) -> str:
    """A locale name from a setting or a header (``zh-CN``, ``zh``, ``en_US``) as one of
    :data:`LOCALES`; anything else is the default."""
    if not locale:
        return DEFAULT
    tag = locale.replace("-", "_")
    if tag.lower().startswith("zh"):
        return "zh_CN"
    if tag.lower().startswith("en"):
        return "en"
    return DEFAULT


def reader_locale(given: str | None = None) -> str:
    """A command's reader: ``--locale``, else the terminal's language (any Chinese gets
    Simplified Chinese), else ``AIPOOL_DEFAULT_LOCALE``, else English."""
    if given:
        return given
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if value := os.environ.get(var):
            return "zh_CN" if value.lower().startswith("zh") else "en"
    return os.environ.get("AIPOOL_DEFAULT_LOCALE", DEFAULT)


_HOLE = re.compile(r"\\\{(\w+)\\\}")
#: the field path before a message (``resources.gpus: …``, ``mounts[0].name: …``)
_PATH = re.compile(r"(?P<path>[\w.\[\]<>-]+): (?P<rest>.+)", re.DOTALL)


def _own_words(template: str) -> int:
    return len(re.sub(r"\{\w+\}", "", template))


class Sentences:
    """English sentences made where the reader is not known, by code that writes them as
    f-strings (a library's messages, a job spec's errors): each template of the catalogue,
    with ``{name}`` holes, is matched against a sentence and shown in the reader's language
    with the values kept. A value that is itself a sentence of the catalogue (words with
    spaces, not a field name) is translated too, and field paths before a message
    (``resources.gpus: …``) are kept as they are."""

    def __init__(self, templates: Iterable[str]) -> None:
        self.templates = tuple(templates)
        # the most words of their own first: "{value} is not allowed: must be {what}; {hint}"
        # before "{value} is not allowed: {hint}"
        holed = sorted((t for t in self.templates if "{" in t), key=_own_words, reverse=True)
        self._patterns = tuple(
            (re.compile(_HOLE.sub(r"(?P<\1>.+?)", re.escape(t)) + r"\Z", re.DOTALL), t)
            for t in holed
        )

    def translate(self, text: str, locale: str | None) -> str:
        """``text`` in ``locale``; itself where no template or path and template matches."""
        if not locale or locale == DEFAULT:
            return text
        return self._translate(text, locale, depth=0)

    def _translate(self, text: str, locale: str, depth: int) -> str:
        said = catalogue(locale).gettext(text)
        if said != text or depth > 4:
            return said
        for pattern, template in self._patterns:
            if m := pattern.match(text):
                values = {
                    k: self._translate(v, locale, depth + 1) if " " in v else v
                    for k, v in m.groupdict().items()
                }
                return catalogue(locale).gettext(template).format(**values)
        if (m := _PATH.fullmatch(text)) and (
            rest := self._translate(m["rest"], locale, depth + 1)
        ) != m["rest"]:
            return f"{m['path']}: {rest}"
        return text
