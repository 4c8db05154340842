"""Reading inventory YAML: parse, check the shape with marshmallow, then build and cross-check.

Two passes, because they fail differently. The marshmallow pass here catches wrong types,
unknown keys and out-of-range numbers field by field. The build pass (:mod:`gres.build`) expands
``count:`` entries and node ranges, applies the top-level defaults and checks what needs the
whole node at once (duplicate indexes, vNPUs that point at a missing NPU or overfill one). Both
report ``path: message``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from gres.build import build_inventory
from gres.errors import InventoryError
from gres.model import Inventory
from gres.naming import DEVICE_PATH_RE, FEATURE_RE, GRES_TYPE_RE

# --- fields ----------------------------------------------------------------------------------

_MESSAGES: dict[str, Any] = {"required": "required field is missing", "null": "must not be empty"}


class _Int(fields.Integer):
    """An integer and nothing else: YAML ``true`` or ``"4"`` is a mistake, not a number."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be an integer")
        return value


class _Bool(fields.Boolean):
    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, bool):
            raise ValidationError("must be true or false")
        return value


class _Token(fields.String):
    """A name-like scalar. YAML reads ``model: 910`` as a number, so integers are accepted."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValidationError("must be a string")
        return value


def _int(lo: int, hi: int | None = None, **kw: Any) -> _Int:
    if hi is None:
        check = validate.Range(min=lo, error="must be at least {min}")
    else:
        check = validate.Range(min=lo, max=hi, error="must be between {min} and {max}")
    return _Int(validate=check, error_messages=_MESSAGES, **kw)


def _token(pattern: Any, what: str, **kw: Any) -> _Token:
    return _Token(
        validate=validate.Regexp(pattern, error=f"{{input!r}} is not {what}"),
        error_messages=_MESSAGES,
        **kw,
    )


def _gres_type(**kw: Any) -> _Token:
    return _token(GRES_TYPE_RE, "a GRES type (lower-case letters, digits, '_' or '-')", **kw)


def _device_path(**kw: Any) -> _Token:
    return _token(DEVICE_PATH_RE, "an absolute path of letters, digits, '_', '.', '-'", **kw)


def _list(inner: fields.Field[Any], **kw: Any) -> fields.List[Any]:
    return fields.List(inner, error_messages={**_MESSAGES, "invalid": "must be a list"}, **kw)


def _nested(schema: type[Schema]) -> fields.Nested:
    return fields.Nested(schema, error_messages={**_MESSAGES, "type": "must be a mapping"})


# --- schemas ---------------------------------------------------------------------------------


class _Strict(Schema):
    class Meta:
        unknown = RAISE


class _GpuSchema(_Strict):
    model = _gres_type(required=True)
    count = _int(1)
    memory_mib = _int(0)
    index = _int(0)
    device = _device_path()
    uuid = _token(r"^[A-Za-z0-9-]{1,80}$", "a GPU UUID")
    mig = _Bool(error_messages=_MESSAGES)


class _NpuSchema(_Strict):
    model = _gres_type(required=True)
    count = _int(1)
    memory_mib = _int(0)
    index = _int(0)
    device = _device_path()


class _VnpuSchema(_Strict):
    npu = _int(0, required=True)
    template = _Token(required=True, error_messages=_MESSAGES)
    count = _int(1)
    id = _int(0)
    device = _device_path()


class _NodeSchema(_Strict):
    name = _Token(required=True, error_messages=_MESSAGES)
    cpus = _int(1, required=True)
    sockets = _int(1)
    cores_per_socket = _int(1)
    threads_per_core = _int(1)
    memory_mb = _int(1, required=True)
    # An empty YAML key (``gpus:``) reads as null; it means "none", as in most YAML configs.
    features = _list(
        _token(FEATURE_RE, "a simple feature token (letters, digits, _ . -)"), allow_none=True
    )
    gpus = _list(_nested(_GpuSchema), allow_none=True)
    npus = _list(_nested(_NpuSchema), allow_none=True)
    vnpus = _list(_nested(_VnpuSchema), allow_none=True)
    # Cambricon MLUs, Hygon DCUs, Kunlunxin XPUs: entries shaped like NPUs'.
    mlus = _list(_nested(_NpuSchema), allow_none=True)
    dcus = _list(_nested(_NpuSchema), allow_none=True)
    xpus = _list(_nested(_NpuSchema), allow_none=True)
    shards_per_gpu = _int(1, 128)
    device_dir = _device_path()


class _SwitchSchema(_Strict):
    name = _Token(required=True, error_messages=_MESSAGES)
    nodes = _list(_Token(error_messages=_MESSAGES), allow_none=True)
    switches = _list(_Token(error_messages=_MESSAGES), allow_none=True)


class _IslandSchema(_Strict):
    node = _Token(required=True, error_messages=_MESSAGES)
    kind = _token(r"^(nvlink|hccs)$", "nvlink or hccs", required=True)
    devices = _list(
        _int(0),
        required=True,
        validate=validate.Length(min=2, error="an island joins 2 or more cards"),
    )


class _InventorySchema(_Strict):
    version = _Int(validate=validate.Equal(1, error="must be 1"), error_messages=_MESSAGES)
    shards_per_gpu = _int(1, 128)
    device_dir = _device_path()
    nodes = _list(
        _nested(_NodeSchema),
        required=True,
        validate=validate.Length(min=1, error="must list at least one node"),
    )
    switches = _list(_nested(_SwitchSchema), allow_none=True)
    islands = _list(_nested(_IslandSchema), allow_none=True)


# --- entry points ----------------------------------------------------------------------------


def load_file(path: Path) -> Inventory:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError([f"{path}: cannot read inventory: {exc}"]) from exc
    return load_text(text)


def load_text(text: str) -> Inventory:
    data = _parse_yaml(text)
    try:
        loaded = _InventorySchema().load(data)
    except ValidationError as exc:
        raise InventoryError(_flatten(exc.messages)) from None
    return build_inventory(loaded)


# --- YAML ------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; an inventory with both is a mistake to report."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable key: the schema reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _parse_yaml(text: str) -> Any:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "yaml"
        raise InventoryError([f"{where}: invalid YAML: {exc.problem or exc}"]) from None
    except yaml.YAMLError as exc:
        raise InventoryError([f"yaml: invalid YAML: {exc}"]) from None
    if not isinstance(data, dict):
        raise InventoryError(["(root): must be a mapping with a 'nodes' list"])
    return data


_HUMANE = {
    "Unknown field.": "unknown field",
    "Missing data for required field.": "required field is missing",
    "Field may not be null.": "must not be empty",
    "Invalid input type.": "must be a mapping",
    "Not a valid list.": "must be a list",
}


def _flatten(messages: Any, path: str = "") -> list[str]:
    """marshmallow's nested error dict → ``["nodes[1].gpus[0].count: must be at least 1"]``."""
    out: list[str] = []
    if isinstance(messages, Mapping):
        for key, value in messages.items():
            if key == "_schema":
                sub = path
            elif isinstance(key, int):
                sub = f"{path}[{key}]"
            else:
                sub = f"{path}.{key}" if path else str(key)
            out.extend(_flatten(value, sub))
    elif isinstance(messages, list | tuple):
        for item in messages:
            out.extend(_flatten(item, path))
    else:
        out.append(f"{path or '(root)'}: {_HUMANE.get(str(messages), str(messages))}")
    return out
