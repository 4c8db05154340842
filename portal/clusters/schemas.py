from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from portal.clusters.service import RESOURCES, ClusterStatus


class CapacitySchema(Schema):
    free = fields.Integer()
    total = fields.Integer()


ClusterStatusSchema = Schema.from_dict(
    {
        "name": fields.String(),
        "reachable": fields.Boolean(),
        "error": fields.String(),
        "nodes": fields.Integer(),
        "states": fields.Dict(keys=fields.String(), values=fields.Integer()),
        "running": fields.Integer(),
        "pending": fields.Integer(),
        **{r: fields.Nested(CapacitySchema) for r in RESOURCES},
    },
    name="ClusterStatusSchema",
)


def cluster_data(c: ClusterStatus) -> dict[str, Any]:
    return {
        "name": c.name,
        "reachable": c.reachable,
        "error": c.error,
        "nodes": c.nodes,
        "states": dict(c.states),
        "running": c.running,
        "pending": c.pending,
        **{r: {"free": u.free, "total": u.total} for r, u in c.capacity.items()},
    }
