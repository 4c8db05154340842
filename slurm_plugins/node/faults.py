"""Fault injection for the lab, whose GPUs and NPUs are device files without a driver.

The lab's node agent (``aipool node agent --inventory gres/examples/lab.yaml --faults
FILE``) reports the node's devices from the inventory, all healthy, then lays this file
over them, read afresh on every report, so a test breaks a card by writing the file and
mends it by emptying it. Real nodes never use it: their devices come from NVML and
``npu-smi``.

```yaml
version: 1
nodes:
  gpu1:
    devices:
      - {kind: gpu, index: 1, errors: ["xid 79"]}   # as NVML would report it
      - {kind: gpu, index: 3, missing: true}        # the card vanished
      - {kind: npu, index: 0, warnings: ["npu-smi health Warning"]}
    clock: {offset: 5s, synchronised: false}        # as chronyc would report it
    probe_errors: ["NVML found GPUs but could not read them"]
```

Every problem is reported as ``path: message`` (:class:`FaultsError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from gres.device import DeviceHealth
from gres.naming import ACCEL_KINDS
from plumbing.fields import parse_duration
from plumbing.validation import flatten
from slurm_plugins.node.report import Clock

KINDS = ("gpu", "npu", *ACCEL_KINDS)


class FaultsError(ValueError):
    def __init__(self, messages: list[str]) -> None:
        self.messages = tuple(messages)
        super().__init__("\n".join(messages))


class _Strict(Schema):
    class Meta:
        unknown = RAISE


_TEXT = fields.String(validate=validate.Regexp(r"^[^\n\r]{1,200}$", error="one line of text"))


class _DeviceFault(_Strict):
    kind = fields.String(required=True, validate=validate.OneOf(KINDS))
    index = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    errors = fields.List(_TEXT, load_default=list)
    warnings = fields.List(_TEXT, load_default=list)
    missing = fields.Boolean(load_default=False)


class _Offset(fields.Field):  # type: ignore[type-arg]
    """Seconds, signed: ``5``, ``-2.5``, ``5s``, ``-1m``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, str):
            raise ValidationError(f"not a signed duration: {value!r}")
        text = value.strip()
        try:
            magnitude = parse_duration(text.lstrip("+-"))
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc
        return -magnitude if text.startswith("-") else magnitude


class _ClockFault(_Strict):
    offset = _Offset(load_default=None, allow_none=True)
    synchronised = fields.Boolean(load_default=None, allow_none=True)


class _NodeFaults(_Strict):
    devices = fields.List(fields.Nested(_DeviceFault), load_default=list)
    clock = fields.Nested(_ClockFault, load_default=None, allow_none=True)
    probe_errors = fields.List(_TEXT, load_default=list)


class _FaultsFile(_Strict):
    version = fields.Integer(load_default=1, validate=validate.Equal(1, error="must be 1"))
    nodes = fields.Dict(
        keys=fields.String(), values=fields.Nested(_NodeFaults, allow_none=True), load_default=dict
    )


@dataclass(frozen=True, slots=True)
class NodeFaults:
    devices: tuple[Mapping[str, Any], ...] = ()
    clock: Clock | None = None
    probe_errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Faults:
    nodes: Mapping[str, NodeFaults] = field(default_factory=dict)

    def for_node(self, node: str) -> NodeFaults:
        return self.nodes.get(node) or NodeFaults()


def parse_faults(data: Any) -> Faults:
    if data is None:
        return Faults()
    if not isinstance(data, dict):
        raise FaultsError(["faults: expected a mapping with a 'nodes' mapping"])
    try:
        raw = _FaultsFile().load(data)
    except ValidationError as exc:
        raise FaultsError(flatten(exc.messages, root="faults")) from exc
    nodes = {}
    for name, n in raw["nodes"].items():
        if n is None:
            continue
        c = n["clock"]
        clock = None if c is None else Clock("fault", c["synchronised"], c["offset"])
        nodes[name] = NodeFaults(tuple(n["devices"]), clock, tuple(n["probe_errors"]))
    return Faults(nodes)


def load_faults(path: Path) -> Faults:
    """The file's faults; none when it does not exist (or is empty)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return Faults()
    except OSError as exc:
        raise FaultsError([f"{path}: {exc.strerror or exc}"]) from exc
    try:
        return parse_faults(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise FaultsError([f"{path}: not valid YAML: {exc}"]) from exc


def apply_faults(
    devices: tuple[DeviceHealth, ...], faults: NodeFaults, node: str
) -> tuple[DeviceHealth, ...]:
    """The devices as the faults say they look; a fault on a device the node does not
    have is an error (a typo would otherwise test nothing)."""
    by_key = {(d.kind, d.index): d for d in devices}
    for i, f in enumerate(faults.devices):
        key = (f["kind"], f["index"])
        if key not in by_key:
            where = f"nodes.{node}.devices[{i}]"
            raise FaultsError([f"{where}: {node} has no {key[0]} {key[1]}"])
        if f["missing"]:
            del by_key[key]
            continue
        d = by_key[key]
        by_key[key] = replace(
            d, errors=(*d.errors, *f["errors"]), warnings=(*d.warnings, *f["warnings"])
        )
    return tuple(by_key[k] for k in sorted(by_key))
