"""The one JSON shape of capacity (``/api/v1/cluster``, ``/api/v1/nodes``,
``/api/v1/clusters``): cards in cards (shards and vNPUs as their share), slices one by one."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from slurm_plugins.client.capacity import Amount, Capacity, Cards
from slurm_plugins.client.models import Node

#: cards are fractions (8 shards of 32 = 0.25); the API rounds them to this many places
PLACES = 4


class AmountSchema(Schema):
    total = fields.Float()
    used = fields.Float()
    free = fields.Float(metadata={"description": "what new work could still get"})
    unavailable = fields.Float(
        metadata={
            "description": "neither used nor free: on nodes that take no new work, or shards "
            "on cards that whole-card jobs hold"
        }
    )


class CardsSchema(AmountSchema):
    whole_free = fields.Integer(metadata={"description": "cards with nothing on them"})


class SliceSchema(AmountSchema):
    type = fields.String(metadata={"description": "shard, or the vNPU's type"})
    share = fields.String(metadata={"description": "of one card, e.g. 1/32"})


class CardModelSchema(Schema):
    kind = fields.String(metadata={"description": "gpu or npu"})
    model = fields.String()
    cards = fields.Nested(CardsSchema)
    slices = fields.List(fields.Nested(SliceSchema))


def capacity_fields() -> dict[str, fields.Field[Any]]:
    return {
        "nodes": fields.Integer(),
        "gpus": fields.Nested(CardsSchema, metadata={"description": "GPU cards"}),
        "shards": fields.Nested(AmountSchema, metadata={"description": "GPU shards"}),
        "npus": fields.Nested(CardsSchema, metadata={"description": "NPU cards"}),
        "vnpus": fields.Nested(AmountSchema, metadata={"description": "vNPUs"}),
        "cpus": fields.Nested(AmountSchema),
        "memory_mb": fields.Nested(AmountSchema),
        "models": fields.List(fields.Nested(CardModelSchema)),
    }


CapacitySchema = Schema.from_dict(capacity_fields(), name="CapacitySchema")
PartitionSchema = Schema.from_dict(
    {"name": fields.String(), **capacity_fields()}, name="PartitionCapacitySchema"
)
ClusterSchema = Schema.from_dict(
    {**capacity_fields(), "partitions": fields.List(fields.Nested(PartitionSchema))},
    name="ClusterSchema",
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
        **capacity_fields(),
    },
    name="NodeSchema",
)


def amount_data(a: Amount) -> dict[str, float]:
    return {
        "total": round(float(a.total), PLACES),
        "used": round(float(a.used), PLACES),
        "free": round(float(a.free), PLACES),
        "unavailable": round(float(a.unavailable), PLACES),
    }


def cards_data(c: Cards) -> dict[str, Any]:
    return {**amount_data(c.cards), "whole_free": c.whole_free}


def capacity_data(cap: Capacity) -> dict[str, Any]:
    gpus, npus = cap.gpus, cap.npus
    return {
        "nodes": cap.nodes,
        "gpus": cards_data(gpus),
        "shards": amount_data(gpus.shards),
        "npus": cards_data(npus),
        "vnpus": amount_data(npus.vnpus),
        "cpus": amount_data(cap.cpus),
        "memory_mb": amount_data(cap.memory_mb),
        "models": [
            {
                "kind": c.kind,
                "model": c.model,
                "cards": cards_data(c),
                "slices": [
                    {"type": s.type, "share": str(s.share), **amount_data(s.units)}
                    for s in c.slices
                ],
            }
            for c in cap.cards
        ],
    }


def node_data(node: Node, cap: Capacity) -> dict[str, Any]:
    return {
        "name": node.name,
        "state": node.state.value,
        "flags": sorted(node.flags),
        "available": node.available,
        "partitions": list(node.partitions),
        "features": list(node.features),
        "reason": node.reason,
        **capacity_data(cap),
    }
