"""Validation of job specs with marshmallow: unknown fields rejected, allow-lists everywhere.

:func:`load_spec` turns a mapping (from YAML or JSON) into a frozen :class:`~jobspec.model.Spec`
or raises one :class:`~jobspec.errors.SpecError` that lists every problem as ``path: message``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, pre_load, validates_schema
from marshmallow.validate import Length, Range

from gres.catalogue import Precision
from gres.naming import ACCEL_KINDS
from jobspec import fields as f
from jobspec.codec import build_spec
from jobspec.errors import SpecError, flatten_messages
from jobspec.model import (
    SINGLETON_ROLES,
    Dependency,
    DependencyType,
    JupyterApp,
    MailEvent,
    MountKind,
    MountMode,
    Priority,
    Spec,
    TopologyKind,
)
from jobspec.names import MAX_NAME, NAME_HINT, is_name
from jobspec.shape import check_shape
from translations import N_

MAX_REPLICAS = 64
PARTITION = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
PARTITION_HINT = N_("use letters, digits, '_' and '-'")
#: a share with a card type (a form without the spec's affinity says its own advice)
SHARE_WITH_TYPE = N_("a share of a card cannot choose the card type; use affinity.features")
CONDA = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class Int(fields.Integer):
    """An integer that is really one: no booleans, floats or numeric strings."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be a whole number")
        return value


class Bool(fields.Boolean):
    """true or false and nothing else: ``1`` or ``"yes"`` is a mistake, not a choice."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be true or false")
        return value


class Strict(Schema):
    class Meta:
        unknown = RAISE


def _enum(enum: Any, **kwargs: Any) -> fields.Enum[Any]:
    return fields.Enum(enum, by_value=True, **kwargs)


#: Resource keys of the MLU, DCU and XPU cards (``mlus: 2``), in ACCEL_KINDS order.
CARD_KEYS = tuple(f"{kind}s" for kind in ACCEL_KINDS)


class ResourcesSchema(Strict):
    gpus = f.Gpus()
    gpu_type = f.Line(pattern=f.WORD, hint=f.WORD_HINT)
    npus = Int(validate=Range(0, 64))
    npu_type = f.Line(pattern=f.WORD, hint=f.WORD_HINT)
    # Cambricon MLU, Hygon DCU, Kunlunxin XPU: whole cards, like NPUs.
    mlus = Int(validate=Range(0, 64))
    mlu_type = f.Line(pattern=f.WORD, hint=f.WORD_HINT)
    dcus = Int(validate=Range(0, 64))
    dcu_type = f.Line(pattern=f.WORD, hint=f.WORD_HINT)
    xpus = Int(validate=Range(0, 64))
    xpu_type = f.Line(pattern=f.WORD, hint=f.WORD_HINT)
    cpus = Int(validate=Range(1, 4096))
    memory = f.Memory()
    nodes = Int(validate=Range(1, 1024))
    tasks_per_node = Int(validate=Range(1, 1024))
    time = f.Duration()
    precision = _enum(Precision)
    min_score = fields.Float(validate=Range(min=0, min_inclusive=False), allow_nan=False)

    @validates_schema
    def _devices(self, data: dict[str, Any], **kwargs: Any) -> None:
        gpus, npus = data.get("gpus", 0), data.get("npus", 0)
        if gpus and npus:
            raise ValidationError("a job asks for GPUs or NPUs, not both", "npus")
        asked = [k for k in ("gpus", "npus", *CARD_KEYS) if data.get(k)]
        if len(asked) > 1:
            raise ValidationError(
                f"a job asks for one kind of card: {' or '.join(asked)}, not both", asked[-1]
            )
        for key in CARD_KEYS:
            if f"{key[:-1]}_type" in data and not data.get(key):
                raise ValidationError(f"set {key} as well", f"{key[:-1]}_type")
        if "gpu_type" in data and not gpus:
            raise ValidationError("set gpus as well", "gpu_type")
        if "gpu_type" in data and gpus.denominator != 1:
            raise ValidationError(SHARE_WITH_TYPE, "gpu_type")
        if "npu_type" in data and not npus:
            raise ValidationError("set npus as well", "npu_type")
        if "precision" in data and not (gpus or npus):
            raise ValidationError("a precision is for cards: set gpus or npus", "precision")
        if "min_score" in data and "precision" not in data:
            raise ValidationError(
                "a score is in TFLOPS at one precision: set precision as well", "min_score"
            )


class RoleResourcesSchema(ResourcesSchema):
    class Meta:
        unknown = RAISE
        exclude = ("nodes", "tasks_per_node", "time")


class RoleSchema(Strict):
    replicas = Int(load_default=1, validate=Range(1, MAX_REPLICAS))
    resources = fields.Nested(RoleResourcesSchema, load_default=dict)
    command = f.Command()
    partition = f.Line(pattern=PARTITION, hint=PARTITION_HINT)


class Roles(fields.Field[dict[str, dict[str, Any]]]):
    """``roles: {ps: {...}, worker: {...}}``; errors are keyed by the role name."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValidationError("must be a mapping of role names to roles")
        out, errors = {}, {}
        for name, role in value.items():
            try:
                out[str(name)] = RoleSchema().load(role if role is not None else {})
            except ValidationError as exc:
                errors[str(name)] = exc.messages
        if errors:
            raise ValidationError(errors)
        return out


class TopologySchema(Strict):
    kind = _enum(TopologyKind, required=True)
    roles = Roles()

    @validates_schema
    def _roles(self, data: dict[str, Any], **kwargs: Any) -> None:
        kind: TopologyKind = data["kind"]
        roles: dict[str, Any] = data.get("roles", {})
        if not kind.heterogeneous:
            if roles:
                raise ValidationError(
                    f"only heterogeneous topologies have roles, not {kind}", "roles"
                )
            return
        wanted = set(kind.roles)
        if unknown := sorted(set(roles) - wanted):
            raise ValidationError(
                f"unknown role(s) {', '.join(unknown)}; {kind} has {', '.join(kind.roles)}", "roles"
            )
        if missing := [r for r in kind.roles if r not in roles]:
            raise ValidationError(f"{kind} needs the role(s) {', '.join(missing)}", "roles")
        for name in SINGLETON_ROLES & wanted:
            if roles[name]["replicas"] != 1:
                raise ValidationError({name: {"replicas": ["must be 1"]}}, "roles")
        if sum(r["replicas"] for r in roles.values()) > MAX_REPLICAS:
            raise ValidationError(f"at most {MAX_REPLICAS} replicas in all", "roles")


class SpecName(f.Line):
    """A spec's name, the job's name in Slurm: the rule of :mod:`jobspec.names`, any script."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=MAX_NAME, **kwargs)

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if not is_name(text):
            raise ValidationError(f"{text!r} is not allowed: {NAME_HINT}")
        return text


class MountSchema(Strict):
    name = f.Line(required=True, pattern=f.NAME, hint=f.NAME_HINT)
    path = f.PathField(required=True, relative_ok=True)
    kind = _enum(MountKind, load_default=MountKind.DATA)
    mode = _enum(MountMode, load_default=MountMode.RO)


class RestartSchema(Strict):
    max_restarts = Int(validate=Range(0, 100))
    on_node_failure = fields.Boolean()
    on_failure = fields.Boolean(load_default=False)

    @validates_schema
    def _needs_restarts(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data["on_failure"] and not data.get("max_restarts"):
            raise ValidationError("on_failure needs max_restarts of at least 1", "max_restarts")
        if data["on_failure"] and data.get("on_node_failure") is False:
            raise ValidationError(
                "on_failure requeues the job, so it cannot forbid requeueing", "on_node_failure"
            )


class Dependencies(fields.Field[list[Dependency]]):
    """``{afterok: [prep, 1234], afterany: train}``: job ids, or names of specs sent together."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValidationError("must map afterok/afterany/afternotok to job ids or spec names")
        out: list[Dependency] = []
        errors: dict[str, Any] = {}
        for key, targets in value.items():
            try:
                kind = DependencyType(key)
            except ValueError:
                errors[str(key)] = ["unknown dependency type; use afterok, afterany or afternotok"]
                continue
            items = targets if isinstance(targets, list) else [targets]
            for i, item in enumerate(items):
                try:
                    out.append(Dependency(kind, _target(item)))
                except ValidationError as exc:
                    errors.setdefault(str(key), {})[i] = exc.messages
        if errors:
            raise ValidationError(errors)
        return out


def _target(item: Any) -> int | str:
    if isinstance(item, int) and not isinstance(item, bool):
        if item < 1:
            raise ValidationError("job ids are positive")
        return item
    text = f.check_line(item)
    if text.isascii() and text.isdigit():
        return int(text)
    if not is_name(text):
        raise ValidationError(f"{text!r} is neither a job id nor a spec name")
    return text


class AffinitySchema(Strict):
    features = fields.List(f.Line(pattern=f.WORD, hint=f.WORD_HINT))
    nodes = fields.List(f.Line(pattern=f.NODES, hint=f.NODES_HINT))
    # "exclude" would shadow Schema.exclude
    excluded = fields.List(f.Line(pattern=f.NODES, hint=f.NODES_HINT), data_key="exclude")
    anti_affinity_group = f.Line(pattern=f.NAME, hint=f.NAME_HINT)
    same_switch = Bool()
    max_wait = f.Duration()

    @validates_schema
    def _switch_wait(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "max_wait" in data and not data.get("same_switch"):
            raise ValidationError("max_wait is how long same_switch may wait; set it", "max_wait")


class NotifySchema(Strict):
    email = f.Line(required=True, pattern=f.EMAIL, hint=f.EMAIL_HINT, max_length=254)
    events = fields.List(
        _enum(MailEvent),
        load_default=lambda: [MailEvent.END, MailEvent.FAIL],
        validate=Length(min=1, error="name at least one event"),
    )


class JupyterSchema(Strict):
    app = _enum(JupyterApp, load_default=JupyterApp.LAB)


class SpecSchema(Strict):
    name = SpecName(required=True)
    project = f.Line(pattern=f.ACCOUNT, hint=f.ACCOUNT_HINT)
    partition = f.Line(pattern=PARTITION, hint=PARTITION_HINT)
    command = f.Command()
    script = f.Line(multiline=True, max_length=f.MAX_SCRIPT)
    resources = fields.Nested(ResourcesSchema, load_default=dict)
    priority = _enum(Priority, load_default=Priority.MEDIUM)
    topology = fields.Nested(TopologySchema)
    env = f.EnvField()
    workdir = f.PathField()
    outputs = f.PathField()
    conda = f.Line()
    modules = fields.List(f.Line(pattern=f.MODULE, hint=f.MODULE_HINT))
    mounts = fields.List(fields.Nested(MountSchema))
    restart = fields.Nested(RestartSchema)
    dependencies = Dependencies()
    affinity = fields.Nested(AffinitySchema)
    notify = fields.Nested(NotifySchema)
    jupyter = fields.Nested(JupyterSchema)

    @pre_load
    def _shorthands(self, data: Any, **kwargs: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValidationError(f"a spec must be a mapping, not {f._kind(data)}")
        data = dict(data)
        if isinstance(data.get("topology"), str):
            data["topology"] = {"kind": data["topology"]}
        if data.get("jupyter") is True:
            data["jupyter"] = {}
        return data

    @validates_schema
    def _paths(self, data: dict[str, Any], **kwargs: Any) -> None:
        conda = data.get("conda")
        if conda is not None and not (CONDA.fullmatch(conda) or f.ABS_PATH.fullmatch(conda)):
            raise ValidationError(
                f"{conda!r} is not a conda environment name or absolute path", "conda"
            )
        seen: dict[str, int] = {}
        for i, mount in enumerate(data.get("mounts", [])):
            key = f"{mount['kind']}:{mount['name'].upper().replace('-', '_').replace('.', '_')}"
            if key in seen:
                raise ValidationError(
                    {i: {"name": [f"clashes with mounts[{seen[key]}] ({mount['name']})"]}}, "mounts"
                )
            seen[key] = i

    @validates_schema
    def _shape(self, data: dict[str, Any], **kwargs: Any) -> None:
        check_shape(data)


def load_spec(data: Any) -> Spec:
    """Validate one spec mapping and build the frozen :class:`~jobspec.model.Spec`."""
    try:
        loaded = SpecSchema().load(data)
    except ValidationError as exc:
        raise SpecError(flatten_messages(exc.messages)) from None
    return build_spec(loaded)
