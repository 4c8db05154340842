"""Simplified Chinese and English: which language a request gets, and locale formatting.

A request's language is the signed-in user's saved choice, else the one a visitor picked with
the switcher (a cookie), else the browser's ``Accept-Language``, else the site's
``DEFAULT_LOCALE`` (``zh_CN`` on a Chinese site). Outside a request (CLI, mail runs) it is the
site's default. Dates are shown in the site's ``TIMEZONE``; money in CNY.

Messages live in ``portal/translations/<locale>/LC_MESSAGES/messages.po`` (compiled ``.mo``
beside it); ``scripts/i18n.py`` extracts, updates, compiles and checks them.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

from babel.dates import get_timezone_gmt, get_timezone_name
from flask import Flask, has_request_context, request
from flask_babel import (
    Babel,
    format_currency,
    format_date,
    format_datetime,
    format_decimal,
    format_percent,
    get_locale,
    get_timezone,
)
from flask_babel import gettext as _gettext
from flask_babel import lazy_gettext as _lazy_gettext
from flask_babel import ngettext as _ngettext
from flask_login import current_user

from jobspec.messages import LIBRARY as SPEC_LIBRARY
from jobspec.messages import TEMPLATES as SPEC_TEMPLATES
from translations import DIRECTORY, N_, Sentences
from translations import LOCALES as _KNOWN

#: The languages the portal speaks, by Babel locale name, each named in itself.
LOCALES = _KNOWN
#: A visitor's choice before signing in (not a secret: a language name).
COOKIE = "aipool_lang"
# what browsers send, mapped onto LOCALES: any Chinese gets Simplified Chinese
_ACCEPT = {"zh-CN": "zh_CN", "zh-Hans": "zh_CN", "zh": "zh_CN", "en": "en"}
EMPTY = "—"


def gettext(message: str, **params: Any) -> str:
    """``message`` in the request's language, ``%(name)s`` placeholders filled from
    ``params`` (import this, not Flask-Babel's untyped one)."""
    return str(_gettext(message, **params))


def ngettext(singular: str, plural: str, num: int, **params: Any) -> str:
    """The form for ``num`` (``%(num)d`` is filled) in the request's language."""
    return str(_ngettext(singular, plural, num, **params))


def lazy_gettext(message: str, **params: Any) -> Any:
    """Translated when shown: for texts made at import time (form labels, constants)."""
    return _lazy_gettext(message, **params)


def select_locale() -> str:
    """The request's language (see the module's doc)."""
    default = _default()
    if not has_request_context():
        return default
    saved = getattr(current_user, "language", None) if _signed_in() else None
    if saved in LOCALES:
        return str(saved)
    chosen = request.cookies.get(COOKIE)
    if chosen in LOCALES:
        return str(chosen)
    best = request.accept_languages.best_match(list(_ACCEPT))
    return _ACCEPT[best] if best else default


def _signed_in() -> bool:
    return bool(getattr(current_user, "is_authenticated", False))


def _default() -> str:
    from flask import current_app

    configured = str(current_app.config.get("DEFAULT_LOCALE") or "en")
    return configured if configured in LOCALES else "en"


def current() -> str:
    """The request's language as :data:`LOCALES` names it (``zh_CN``, ``en``)."""
    locale = get_locale()
    if locale is None:
        return "en"
    return f"{locale.language}_{locale.territory}" if locale.territory else locale.language


def html_lang() -> str:
    """``zh-CN`` or ``en``: the page's ``lang`` attribute (BCP 47)."""
    return current().replace("_", "-")


# ------------------------------------------------------------------ formatting
def when(value: datetime | date | None, style: str = "short") -> str:
    """A date and time in the site's time zone, the locale's way (``—`` for none)."""
    if value is None:
        return EMPTY
    if isinstance(value, datetime):
        return str(format_datetime(value, style))
    return str(format_date(value, style))


def zone() -> str:
    """The site's time zone as a reader names it, with its offset now: ``中国时间（GMT+08:00）``,
    ``China Time (GMT+08:00)``; ``UTC`` where the site keeps UTC."""
    tz = get_timezone()
    if tz is None or str(tz) in {"UTC", "Etc/UTC", "GMT", "Etc/GMT"}:
        return "UTC"
    locale = get_locale() or "en"
    offset = get_timezone_gmt(datetime.now(tz), locale=locale)
    name = get_timezone_name(tz, locale=locale)
    return gettext("%(name)s (%(offset)s)", name=name, offset=offset)


def number(value: float | int | Decimal | None, digits: int | None = None) -> str:
    """A number with the locale's separators; ``digits`` fixes the decimals shown."""
    if value is None:
        return EMPTY
    if digits is None:
        return str(format_decimal(value))
    pattern = "#,##0" + ("." + "0" * digits if digits else "")
    return str(format_decimal(value, format=pattern))


def percent(ratio: float | Decimal | None, digits: int = 1) -> str:
    """A ratio (0.5) as a percentage the locale's way (``50.0%``)."""
    if ratio is None:
        return EMPTY
    return str(format_percent(ratio, format="#,##0" + ("." + "0" * digits if digits else "") + "%"))


def money(amount: Decimal | float | int | None) -> str:
    """An amount in yuan: ``¥1,234.50`` in Chinese, ``CN¥1,234.50`` in English."""
    if amount is None:
        return EMPTY
    return str(format_currency(amount, "CNY"))


def _context() -> dict[str, Any]:
    return {
        "html_lang": html_lang(),
        "current_locale": current(),
        "languages": LOCALES,
        "zone": zone,
    }


def install(app: Flask) -> None:
    """Babel on ``app``: the locale and time zone selectors, the Jinja filters and names."""
    app.config.setdefault("BABEL_DEFAULT_LOCALE", _default_of(app))
    app.config.setdefault("BABEL_DEFAULT_TIMEZONE", app.config.get("TIMEZONE") or "UTC")
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(DIRECTORY))
    Babel(app, locale_selector=select_locale)
    app.jinja_env.filters.update(when=when, number=number, percent=percent, money=money)
    app.context_processor(_context)


def _default_of(app: Flask) -> str:
    configured = str(app.config.get("DEFAULT_LOCALE") or "en")
    if configured not in LOCALES:
        raise ValueError(f"DEFAULT_LOCALE must be one of {', '.join(LOCALES)}, not {configured!r}")
    return configured


# ------------------------------------------------------------------ library messages
# What marshmallow, webargs and werkzeug say in English, and a job spec's errors, as templates
# the catalogue holds: a message from them is matched against these and shown in the reader's
# language (translations.Sentences).
LIBRARY_MESSAGES = (
    *SPEC_LIBRARY,
    N_("Invalid value."),
    N_("Invalid input."),
    N_("Invalid input type."),
    N_("Invalid type."),
    N_("Not a valid email address."),
    N_("Not a valid URL."),
    N_("Not a valid date."),
    N_("Not a valid datetime."),
    N_("Not a valid IP address."),
    N_("Number too large."),
    N_("String does not match expected pattern."),
    N_("Shorter than minimum length {min}."),
    N_("Length must be between {min} and {max}."),
    N_("Length must be {equal}."),
    N_("Must be less than or equal to {max}."),
    N_("Must be less than {max}."),
    N_("Must be greater than {min} and less than {max}."),
    N_("Must be greater than or equal to {min} and less than {max}."),
    N_("Must be greater than {min} and less than or equal to {max}."),
    N_("Must be equal to {other}."),
    N_("The browser (or proxy) sent a request that this server could not understand."),
    N_(
        "The requested URL was not found on the server. If you entered the URL manually "
        "please check your spelling and try again."
    ),
    N_("The method is not allowed for the requested URL."),
    N_("The server does not support the media type transmitted in the request."),
    N_(
        "The server encountered an internal error and was unable to complete your request. "
        "Either the server is overloaded or there is an error in the application."
    ),
    N_("The CSRF token is missing."),
    N_("The CSRF token is invalid."),
    N_("The CSRF token has expired."),
    N_("The CSRF session token is missing."),
    N_("The CSRF tokens do not match."),
)


@cache
def _sentences() -> Sentences:
    return Sentences((*LIBRARY_MESSAGES, *SPEC_TEMPLATES))


def translate_message(text: str) -> str:
    """A library's English message, or a job spec's error, in the reader's language (itself
    when unknown)."""
    return _sentences().translate(text, current())


def translate_messages(errors: Any) -> Any:
    """Field errors as marshmallow and webargs give them (nested dicts and lists of
    messages), each message in the reader's language."""
    if isinstance(errors, dict):
        return {k: translate_messages(v) for k, v in errors.items()}
    if isinstance(errors, list):
        return [translate_messages(v) for v in errors]
    if isinstance(errors, str):
        return translate_message(errors)
    return errors
