"""The configuration of elastic nodes: which nodes Slurm may power down, how fast, the floor
and ceiling of each partition, how a node is switched on and off, and its idle power.

```yaml
version: 1
nodes: egpu[1-2],enpu1        # power-saved nodes (Slurm hostlist); all others stay up
suspend_time: 10m             # idle this long -> powered down (SuspendTime)
suspend_timeout: 1m           # a node is off this long after its suspend (SuspendTimeout)
resume_timeout: 10m           # not up this long after a resume -> DOWN (ResumeTimeout)
resume_rate: 20               # nodes per minute Slurm resumes at most (0: no limit)
suspend_rate: 20              # nodes per minute Slurm suspends at most (0: no limit)
partitions:                   # per partition: nodes kept up, nodes up at most
  gpu: {floor: 1, ceiling: 8}
idle_watts: 300               # a node's draw when idle, powered on
node_watts: {egpu1: 450}      # per node, over idle_watts
events: /var/lib/aipool/power/events.jsonl   # what the programs record (energy saved)
env: {SLURM_CONF: /etc/slurm/slurm.conf}
driver:                       # how a node is switched: command | ipmi | cloud | lab
  kind: command
  resume: [/usr/local/sbin/node-power, "on", "{node}"]
  suspend: [/usr/local/sbin/node-power, "off", "{node}"]
  timeout: 60s
```
(docs/elastic.md has every driver's keys.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from gres.hostlist import expand_hostlist
from plumbing.errors import ConfigError
from plumbing.fields import Duration

NODE_PLACEHOLDER = "{node}"


class DriverKind(StrEnum):
    COMMAND = "command"
    IPMI = "ipmi"
    CLOUD = "cloud"
    LAB = "lab"


@dataclass(frozen=True, slots=True)
class DriverConfig:
    """How nodes are switched on and off; which fields count depends on ``kind``."""

    kind: DriverKind
    timeout_s: float = 60.0
    #: command: argv templates, ``{node}`` replaced by the node's name (no shell)
    resume: tuple[str, ...] = ()
    suspend: tuple[str, ...] = ()
    #: ipmi: the BMC's address template, user, password file, interface
    host: str = "{node}-bmc"
    user: str = ""
    password_file: Path | None = None
    interface: str = "lanplus"
    ipmitool: str = "ipmitool"
    #: cloud: the API's base URL and the file holding its bearer token
    url: str = ""
    token_file: Path | None = None
    #: lab: the lab's privileged starter (argv prefix, e.g. sudo -n <helper>)
    helper: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    """``floor``: power-saved nodes Slurm keeps up; ``ceiling``: at most this many up at once
    (None: no ceiling)."""

    floor: int = 0
    ceiling: int | None = None


@dataclass(frozen=True, slots=True)
class PowerConfig:
    nodes: tuple[str, ...]
    driver: DriverConfig
    suspend_time_s: int = 600
    suspend_timeout_s: int = 60
    resume_timeout_s: int = 600
    resume_rate: int = 20
    suspend_rate: int = 20
    partitions: Mapping[str, PartitionLimits] = field(default_factory=dict)
    idle_watts: float = 300.0
    node_watts: Mapping[str, float] = field(default_factory=dict)
    events: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: driver calls made at once (each node is one call)
    parallel: int = 8

    def watts(self, node: str) -> float:
        """The node's idle draw: its own figure, else the site's."""
        return self.node_watts.get(node, self.idle_watts)


class _Strict(Schema):
    class Meta:
        unknown = RAISE


class _Hostlist(fields.Field):  # type: ignore[type-arg]
    default_error_messages = {"invalid": "{error}"}  # noqa: RUF012

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kw: Any) -> tuple[str, ...]:
        if not isinstance(value, str):
            raise self.make_error("invalid", error="a Slurm hostlist, e.g. gpu[1-4],npu1")
        try:
            names = expand_hostlist(value)
        except ValueError as exc:
            raise self.make_error("invalid", error=str(exc)) from exc
        if not names:
            raise self.make_error("invalid", error="names no node")
        return names


def _argv() -> fields.List[Any]:
    return fields.List(fields.String(validate=validate.Length(min=1)), load_default=list)


_SECONDS = validate.Range(min=1, max=86400)


class _DriverSchema(_Strict):
    kind = fields.Enum(DriverKind, by_value=True, required=True)
    timeout = Duration(load_default=60.0, validate=_SECONDS)
    resume = _argv()
    suspend = _argv()
    host = fields.String(load_default="{node}-bmc", validate=validate.Length(min=1))
    user = fields.String(load_default="")
    password_file = fields.String(load_default=None, allow_none=True)
    interface = fields.String(load_default="lanplus", validate=validate.OneOf(["lan", "lanplus"]))
    ipmitool = fields.String(load_default="ipmitool", validate=validate.Length(min=1))
    url = fields.Url(load_default="", require_tld=False, schemes={"http", "https"})
    token_file = fields.String(load_default=None, allow_none=True)
    helper = _argv()

    @validates_schema
    def _needs(self, data: dict[str, Any], **kw: Any) -> None:
        kind = data["kind"]
        missing = {
            DriverKind.COMMAND: ("resume", "suspend"),
            DriverKind.IPMI: ("user", "password_file"),
            DriverKind.CLOUD: ("url", "token_file"),
            DriverKind.LAB: ("helper",),
        }[kind]
        errors = {k: [f"required by the {kind} driver"] for k in missing if not data.get(k)}
        if errors:
            raise ValidationError(errors)


class _PartitionSchema(_Strict):
    floor = fields.Integer(load_default=0, validate=validate.Range(min=0))
    ceiling = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=0))


class _PowerSchema(_Strict):
    version = fields.Integer(load_default=1, validate=validate.Equal(1))
    nodes = _Hostlist(required=True)
    driver = fields.Nested(_DriverSchema, required=True)
    suspend_time = Duration(load_default=600, validate=validate.Range(min=1))
    suspend_timeout = Duration(load_default=60, validate=validate.Range(min=1, max=65533))
    resume_timeout = Duration(load_default=600, validate=validate.Range(min=1, max=65533))
    resume_rate = fields.Integer(load_default=20, validate=validate.Range(min=0))
    suspend_rate = fields.Integer(load_default=20, validate=validate.Range(min=0))
    partitions = fields.Dict(
        keys=fields.String(validate=validate.Length(min=1)),
        values=fields.Nested(_PartitionSchema),
        load_default=dict,
    )
    idle_watts = fields.Float(load_default=300.0, validate=validate.Range(min=0))
    node_watts = fields.Dict(
        keys=fields.String(), values=fields.Float(validate=validate.Range(min=0)), load_default=dict
    )
    events = fields.String(load_default=None, allow_none=True)
    env = fields.Dict(keys=fields.String(), values=fields.String(), load_default=dict)
    parallel = fields.Integer(load_default=8, validate=validate.Range(min=1, max=256))

    @validates_schema(skip_on_field_errors=False)
    def _limits(self, data: dict[str, Any], **kw: Any) -> None:
        for name, lim in (data.get("partitions") or {}).items():
            if lim.get("ceiling") is not None and lim.get("floor", 0) > lim["ceiling"]:
                raise ValidationError({"partitions": {name: ["floor is above ceiling"]}})


def parse_config(data: Any, *, source: str = "power") -> PowerConfig:
    """A validated :class:`PowerConfig` from parsed YAML; :class:`ConfigError` lists every
    ``path: message``."""
    try:
        raw = _PowerSchema().load(data if data is not None else {})
    except ValidationError as exc:
        raise ConfigError(_flatten(exc.messages, source)) from exc
    d = raw["driver"]
    driver = DriverConfig(
        kind=d["kind"],
        timeout_s=d["timeout"],
        resume=tuple(d["resume"]),
        suspend=tuple(d["suspend"]),
        host=d["host"],
        user=d["user"],
        password_file=Path(d["password_file"]) if d["password_file"] else None,
        interface=d["interface"],
        ipmitool=d["ipmitool"],
        url=d["url"].rstrip("/"),
        token_file=Path(d["token_file"]) if d["token_file"] else None,
        helper=tuple(d["helper"]),
    )
    return PowerConfig(
        nodes=raw["nodes"],
        driver=driver,
        suspend_time_s=int(raw["suspend_time"]),
        suspend_timeout_s=int(raw["suspend_timeout"]),
        resume_timeout_s=int(raw["resume_timeout"]),
        resume_rate=raw["resume_rate"],
        suspend_rate=raw["suspend_rate"],
        partitions={
            k: PartitionLimits(v["floor"], v["ceiling"]) for k, v in raw["partitions"].items()
        },
        idle_watts=raw["idle_watts"],
        node_watts=dict(raw["node_watts"]),
        events=Path(raw["events"]) if raw["events"] else None,
        env=dict(raw["env"]),
        parallel=raw["parallel"],
    )


def load_config(path: str | Path) -> PowerConfig:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError([f"{p}: {exc.strerror or exc}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{p}: not valid YAML: {exc}"]) from exc
    return parse_config(data, source=str(p))


def _flatten(messages: Any, path: str) -> list[str]:
    if isinstance(messages, dict):
        return [m for k, v in messages.items() for m in _flatten(v, f"{path}.{k}")]
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [f"{path}: {m}" for m in messages]
    if isinstance(messages, list):
        return [m for v in messages for m in _flatten(v, path)]
    return [f"{path}: {messages}"]
