from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from portal.nodes.service import Usage, node_usage
from slurm_plugins.client.models import Node


class UsageSchema(Schema):
    used = fields.Integer()
    total = fields.Integer()


def _usage_fields() -> dict[str, fields.Nested]:
    return {r: fields.Nested(UsageSchema) for r in ("gpus", "shards", "npus", "cpus", "memory_mb")}


ClusterSchema = Schema.from_dict(
    {"nodes": fields.Integer(), **_usage_fields()}, name="ClusterSchema"
)
NodeSchema = Schema.from_dict(
    {
        "name": fields.String(),
        "state": fields.String(),
        "flags": fields.List(fields.String()),
        "available": fields.Boolean(),
        "partitions": fields.List(fields.String()),
        "features": fields.List(fields.String()),
        "reason": fields.String(),
        **_usage_fields(),
    },
    name="NodeSchema",
)


def usage_data(u: Usage) -> dict[str, int]:
    return {"used": u.used, "total": u.total}


def node_data(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "state": node.state.value,
        "flags": sorted(node.flags),
        "available": node.available,
        "partitions": list(node.partitions),
        "features": list(node.features),
        "reason": node.reason,
        **{k: usage_data(u) for k, u in node_usage(node).items()},
    }
