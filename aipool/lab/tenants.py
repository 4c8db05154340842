"""Demo tenants of the lab: QOS, accounts and users, loaded from YAML and validated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from aipool.lab.daemons import LabError
from plumbing.validation import flatten
from slurm_plugins.client.specs import AccountSpec, QosSpec, UserSpec

_NAME = validate.Regexp(r"^[a-z][a-z0-9_-]{0,31}$", error="must be a lower-case Slurm/Unix name")


class _Qos(Schema):
    class Meta:
        unknown = RAISE

    name = fields.Str(required=True, validate=_NAME)
    priority = fields.Int(load_default=0, validate=validate.Range(min=0))
    preempt = fields.List(fields.Str(validate=_NAME), load_default=list)


class _Account(Schema):
    class Meta:
        unknown = RAISE

    name = fields.Str(required=True, validate=_NAME)
    parent = fields.Str(load_default="root", validate=_NAME)
    description = fields.Str(load_default="")


class _User(Schema):
    class Meta:
        unknown = RAISE

    name = fields.Str(required=True, validate=_NAME)
    account = fields.Str(required=True, validate=_NAME)
    qos = fields.List(fields.Str(validate=_NAME), load_default=lambda: ["normal"])


class _Tenants(Schema):
    class Meta:
        unknown = RAISE

    qos = fields.List(fields.Nested(_Qos), load_default=list)
    accounts = fields.List(fields.Nested(_Account), load_default=list)
    users = fields.List(fields.Nested(_User), load_default=list)


@dataclass(frozen=True, slots=True)
class Tenants:
    qos: tuple[QosSpec, ...]
    accounts: tuple[AccountSpec, ...]
    users: tuple[UserSpec, ...]

    @property
    def unix_users(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.name for u in self.users))


def load_tenants(path: Path) -> Tenants:
    try:
        raw: Any = yaml.safe_load(path.read_text())
        data = _Tenants().load(raw or {})
    except yaml.YAMLError as exc:
        raise LabError(f"{path}: not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise LabError(f"{path}: {'; '.join(flatten(exc.messages))}") from exc
    known = {"root"} | {a["name"] for a in data["accounts"]}
    for i, a in enumerate(data["accounts"]):
        if a["parent"] not in known:
            raise LabError(f"{path}: accounts[{i}].parent: unknown account {a['parent']!r}")
    for i, u in enumerate(data["users"]):
        if u["account"] not in known:
            raise LabError(f"{path}: users[{i}].account: unknown account {u['account']!r}")
    return Tenants(
        qos=tuple(QosSpec(q["name"], q["priority"], tuple(q["preempt"])) for q in data["qos"]),
        accounts=tuple(
            AccountSpec(a["name"], a["parent"], a["description"]) for a in data["accounts"]
        ),
        users=tuple(
            UserSpec(u["name"], u["account"], tuple(u["qos"]), u["qos"][0]) for u in data["users"]
        ),
    )
