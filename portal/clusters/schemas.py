from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from portal.clusters.service import ClusterStatus
from portal.nodes.schemas import capacity_data, capacity_fields

ClusterStatusSchema = Schema.from_dict(
    {
        **capacity_fields(),
        "name": fields.String(),
        "reachable": fields.Boolean(),
        "error": fields.String(),
        "states": fields.Dict(
            keys=fields.String(),
            values=fields.Integer(),
            metadata={"description": "nodes by Slurm's node state (IDLE, MIXED, DOWN …)"},
        ),
        "running": fields.Integer(),
        "pending": fields.Integer(),
    },
    name="ClusterStatusSchema",
)


def cluster_data(c: ClusterStatus) -> dict[str, Any]:
    return {
        **capacity_data(c.capacity),
        "name": c.name,
        "reachable": c.reachable,
        "error": c.error,
        "nodes": c.nodes,
        "states": dict(c.states),
        "running": c.running,
        "pending": c.pending,
    }
