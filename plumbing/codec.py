"""JSON for the daemons' frozen dataclasses (snapshots, plans, state files, notifications),
by msgspec.

``dump`` gives the JSON-ready value (dataclasses as objects, enums as their values, sets
sorted, tuples as lists, mapping keys as strings); ``load`` reads it back guided by the type
hints, so a policy snapshot written with ``--dump-snapshot`` replays to an equal object. A
value of the wrong shape raises :class:`CodecError`, whose message names the path
(``$.jobs[0].state``); a field the class does not have is passed over, so a state file that
a newer release wrote still loads (snapshots carry their own version).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class CodecError(ValueError):
    """The JSON does not have the shape the dataclass wants; the message names the path."""


def dump(obj: object) -> Any:
    """A JSON-ready value, the same for equal objects (sets and frozensets sorted)."""
    return msgspec.to_builtins(obj, str_keys=True, order="deterministic")


def load(cls: type[T], data: Any) -> T:
    """Build ``cls`` (a dataclass) from what :func:`dump` produced."""
    try:
        return msgspec.convert(data, cls, str_keys=True)
    except msgspec.ValidationError as exc:
        raise CodecError(str(exc)) from exc
