"""Sign-in limits, on both login forms (the page and ``POST /api/v1/auth/token``).

- per client address: ``LOGIN_RATE_LIMIT`` attempts, failed or not;
- per account: ``ACCOUNT_LOCKOUT`` failed attempts (``None``: off). An account that reached it
  is refused with 429 and ``Retry-After``, even with the right password, until the window has
  passed: guessing one user's password from many addresses gets nowhere either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request
from werkzeug.wrappers import Response

from portal.extensions import limiter
from portal.i18n import gettext
from portal.web import setting


def _locked() -> str:
    return gettext("Too many failed sign-ins for this account: wait, then try again.")


def _address_limit() -> str:
    return str(setting("LOGIN_RATE_LIMIT"))


def _address_message() -> str:
    return gettext(
        "Too many sign-ins from this address (%(limit)s): wait, then try again.",
        limit=_address_limit(),
    )


def _account_limit() -> str:
    return str(setting("ACCOUNT_LOCKOUT") or "1 per second")  # unused when off (exempt)


def _account_key() -> str:
    data = request.get_json(silent=True) if request.is_json else None
    name = data.get("username") if isinstance(data, dict) else request.form.get("username")
    return "account:" + str(name or "").strip().lower()[:150]


def _failed(response: Response) -> bool:
    return response.status_code == 401


def _lockout_off() -> bool:
    return not setting("ACCOUNT_LOCKOUT")


def sign_in_limits() -> list[Callable[[Any], Any]]:
    """The decorators of a login view: its address's limit, then its account's."""
    return [
        limiter.limit(_address_limit, methods=["POST"], error_message=_address_message),
        limiter.shared_limit(  # one count per account over both forms
            _account_limit,
            scope="sign-in-account",
            key_func=_account_key,
            methods=["POST"],
            deduct_when=_failed,
            exempt_when=_lockout_off,
            error_message=_locked,
        ),
    ]
