from __future__ import annotations

from marshmallow import Schema, fields

from portal.schemas import limit


class QuotaSchema(Schema):
    """Group limits (Slurm GrpTRES); null or absent in a reply means no limit."""

    gpus = limit(metadata={"description": "whole GPUs (gres/gpu)"})
    shards = limit(metadata={"description": "GPU shards, 32 per card (gres/shard)"})
    npus = limit(metadata={"description": "Ascend NPUs (gres/npu)"})
    cpus = limit(metadata={"description": "CPU cores (cpu)"})


class QuotaSavedSchema(QuotaSchema):
    """The limits as saved, and what was sent to Slurm for the tenant (or would be)."""

    slurm = fields.Dict(
        metadata={"description": "applied: sent to Slurm (false for a dry run); commands: sacctmgr"}
    )


class DryRunSchema(Schema):
    dry_run = fields.Boolean(
        load_default=False,
        metadata={"description": "show the Slurm commands; save nothing"},
    )


class SyncSchema(Schema):
    applied = fields.Boolean()
    commands = fields.List(fields.String())
    accounts = fields.List(fields.String())
    users = fields.List(fields.String())


class PolicySchema(Schema):
    applied = fields.Boolean()
    directory = fields.String(metadata={"description": "where slurmctld reads job_submit.lua"})
    digest = fields.String(metadata={"description": "the policy's digest, as jobs are tagged"})
    stale = fields.List(fields.String(), metadata={"description": "files that differ now"})
    changed = fields.List(fields.String(), metadata={"description": "files written"})
    tenants = fields.List(fields.String())
    users = fields.List(fields.String())
    table = fields.String(metadata={"description": "the rendered policy table (Lua)"})
