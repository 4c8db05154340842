"""JSON for the daemons' frozen dataclasses (snapshots, plans, state files, notifications).

One small, type-driven codec instead of a hand-written ``to_dict``/``from_dict`` per class:
``dump`` walks dataclass fields, ``load`` reads them back guided by the type hints, so a
policy snapshot written with ``--dump-snapshot`` replays to an equal object.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


class CodecError(ValueError):
    """The JSON does not have the shape the dataclass wants; the message names the path."""


def dump(obj: object) -> Any:
    """A JSON-ready value: dataclasses become objects, tuples and sets become lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: dump(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {str(k): dump(v) for k, v in obj.items()}
    if isinstance(obj, frozenset | set):
        return sorted(dump(v) for v in obj)
    if isinstance(obj, tuple | list):
        return [dump(v) for v in obj]
    return obj


def load(cls: type[T], data: Any) -> T:
    """Build ``cls`` (a dataclass) from what :func:`dump` produced."""
    return typing.cast(T, _load(cls, data, "$"))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _load(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _load(rest[0], data, path)
        for a in rest:  # first alternative that accepts the value
            try:
                return _load(a, data, path)
            except CodecError:
                continue
        raise CodecError(f"{path}: {data!r} matches none of {tp}")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _load_dataclass(tp, data, path)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError as exc:
            raise CodecError(f"{path}: {data!r} is not a {tp.__name__}") from exc
    if origin is tuple:
        _expect(data, list, path)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_load(args[0], v, f"{path}[{i}]") for i, v in enumerate(data))
        if len(args) != len(data):
            raise CodecError(f"{path}: expected {len(args)} items, got {len(data)}")
        pairs = enumerate(zip(args, data, strict=True))
        return tuple(_load(a, v, f"{path}[{i}]") for i, (a, v) in pairs)
    if origin in (frozenset, set):
        _expect(data, list, path)
        return frozenset(_load(args[0], v, f"{path}[]") for v in data)
    if origin in (dict, Mapping, typing.Mapping) or tp is dict:
        _expect(data, dict, path)
        kt, vt = args or (str, Any)
        return {_key(kt, k, path): _load(vt, v, f"{path}.{k}") for k, v in data.items()}
    return _scalar(tp, data, path)


def _load_dataclass(cls: type, data: Any, path: str) -> Any:
    _expect(data, dict, path)
    hints = _hints(cls)
    kwargs = {}
    fields = [f for f in dataclasses.fields(cls) if f.init]
    for f in fields:
        if f.name in data:
            kwargs[f.name] = _load(hints[f.name], data[f.name], f"{path}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise CodecError(f"{path}: missing field {f.name!r}")
    unknown = set(data) - {f.name for f in fields}
    if unknown:
        raise CodecError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
    return cls(**kwargs)


def _key(kt: Any, key: str, path: str) -> Any:
    if kt is int:
        try:
            return int(key)
        except ValueError as exc:
            raise CodecError(f"{path}: key {key!r} is not an integer") from exc
    return key


def _scalar(tp: Any, data: Any, path: str) -> Any:
    if tp is float and isinstance(data, int | float) and not isinstance(data, bool):
        return float(data)
    if tp is int and isinstance(data, int) and not isinstance(data, bool):
        return data
    if tp in (str, bool) and isinstance(data, tp):
        return data
    raise CodecError(f"{path}: expected {getattr(tp, '__name__', tp)}, got {data!r}")


def _expect(data: Any, kind: type, path: str) -> None:
    if not isinstance(data, kind):
        raise CodecError(f"{path}: expected a {kind.__name__}, got {type(data).__name__}")
