from __future__ import annotations

from marshmallow import Schema, fields

from portal.schemas import limit


class QuotaSchema(Schema):
    """Group limits (Slurm GrpTRES); null or absent in a reply means no limit."""

    gpus = limit(metadata={"description": "whole GPUs (gres/gpu)"})
    shards = limit(metadata={"description": "GPU shards, 32 per card (gres/shard)"})
    npus = limit(metadata={"description": "Ascend NPUs (gres/npu)"})
    cpus = limit(metadata={"description": "CPU cores (cpu)"})


class SyncSchema(Schema):
    applied = fields.Boolean()
    commands = fields.List(fields.String())
    accounts = fields.List(fields.String())
    users = fields.List(fields.String())
