"""marshmallow fields the policy config shares: resource maps (durations are
:mod:`plumbing.fields`')."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import ValidationError, fields

from slurm_plugins.policy.resources import RESOURCES


def resource_map(**kw: Any) -> fields.Dict:
    """``{gpu: 4, npu: 8}``: amounts per known resource, none negative."""

    def check(value: Mapping[str, float]) -> None:
        bad = [k for k in value if k not in RESOURCES]
        if bad:
            raise ValidationError(f"unknown resource(s) {bad}; known: {', '.join(RESOURCES)}")
        if any(v < 0 for v in value.values()):
            raise ValidationError("amounts must not be negative")

    return fields.Dict(keys=fields.String(), values=fields.Float(), validate=check, **kw)
