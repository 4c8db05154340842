"""Durations in the daemons' configuration files: ``90``, ``"90s"``, ``"15m"``, ``"1h30m"``."""

from __future__ import annotations

import re
from typing import Any

from marshmallow import fields

from plumbing.address import Address, parse_address

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(value: object) -> float:
    """Seconds from ``90``, ``"90s"``, ``"15m"``, ``"1h30m"``, ``"7d"``."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"duration must not be negative: {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"not a duration: {value!r}")
    text = value.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {value!r} (use e.g. 90s, 15m, 1h30m, 7d)")
    return sum(float(n) * _UNITS[u] for n, u in parts)


class Duration(fields.Field):  # type: ignore[type-arg]
    """Seconds as a float; accepts numbers and ``1h30m``-style strings."""

    default_error_messages = {"invalid": "{error}"}  # noqa: RUF012

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kw: Any) -> float:
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise self.make_error("invalid", error=str(exc)) from exc

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kw: Any) -> Any:
        return value


class ListenAddress(fields.Field):  # type: ignore[type-arg]
    """``host:port`` a daemon serves on (``127.0.0.1:9101``, ``[::1]:9101``)."""

    default_error_messages = {"invalid": "{error}"}  # noqa: RUF012

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kw: Any) -> Address:
        try:
            return parse_address(value)
        except ValueError as exc:
            raise self.make_error("invalid", error=str(exc)) from exc

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kw: Any) -> Any:
        return None if value is None else str(value)
