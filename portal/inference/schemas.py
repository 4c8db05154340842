"""Request and response shapes of the inference service API."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from jobspec.names import Name
from portal.inference.models import Device
from portal.schemas import ident, name

_IPS = fields.List(
    fields.String(validate=validate.Length(min=1, max=64)),
    validate=validate.Length(max=64),
    metadata={"description": "addresses or CIDRs allowed to call; empty: any"},
)
_REPLICAS = fields.Integer(strict=True, validate=validate.Range(min=0, max=8))
_DEVICE = fields.String(
    validate=validate.OneOf([d.value for d in Device]),
    metadata={"description": "cpu, fraction (shards k/32 of a card) or gpu (whole cards)"},
)


class ServiceQuerySchema(Schema):
    project_id = ident(query=True)


class ServiceCreateSchema(Schema):
    version_id = ident(required=True)
    project_id = ident()
    name = name(64, required=False, validate=Name())
    device = _DEVICE
    gpus = fields.Integer(strict=True, validate=validate.Range(min=1, max=8))
    shards = fields.Integer(strict=True, validate=validate.Range(min=1, max=31))
    replicas = fields.Integer(strict=True, validate=validate.Range(min=1, max=8))
    allow_ips = _IPS
    expires_at = fields.AwareDateTime(allow_none=True)


class ServiceUpdateSchema(Schema):
    replicas = _REPLICAS
    allow_ips = _IPS
    expires_at = fields.AwareDateTime(allow_none=True)
    device = _DEVICE
    gpus = fields.Integer(strict=True, validate=validate.Range(min=1, max=8))
    shards = fields.Integer(strict=True, validate=validate.Range(min=1, max=31))


class InferenceReplicaSchema(Schema):
    index = fields.Integer()
    job_id = fields.Integer(allow_none=True)
    ready = fields.Boolean()
    restarts = fields.Integer()
    failures = fields.Integer(metadata={"description": "failed runs in a row"})
    retry_at = fields.DateTime(allow_none=True, metadata={"description": "next start, backing off"})
    last_error = fields.String()


class ServiceSchema(Schema):
    id = fields.Integer()
    name = fields.String()
    version_id = fields.Integer()
    model_id = fields.Integer()
    version = fields.Integer()
    project_id = fields.Integer()
    owner_id = fields.Integer()
    state = fields.String()
    health = fields.String(metadata={"description": "starting, ready, failing, or the state"})
    last_error = fields.String(metadata={"description": "why a failing replica failed"})
    device = fields.String()
    gpus = fields.Integer()
    shards = fields.Integer()
    replicas = fields.Integer()
    ready_replicas = fields.Integer()
    replica_jobs = fields.List(fields.Nested(InferenceReplicaSchema))
    url = fields.String(metadata={"description": "call it here with the X-Service-Token header"})
    token_hint = fields.String()
    token = fields.String(metadata={"description": "only when created or renewed"})
    allow_ips = fields.List(fields.String())
    expires_at = fields.DateTime(allow_none=True)
    calls = fields.Integer()
    errors = fields.Integer()
    created_at = fields.DateTime()
    updated_at = fields.DateTime()


class ServiceTokenSchema(Schema):
    token = fields.String()
