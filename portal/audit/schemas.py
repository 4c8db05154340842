from __future__ import annotations

from datetime import UTC

from marshmallow import Schema, fields

from portal.schemas import ident, text


class AuditEventSchema(Schema):
    id = fields.Integer()
    at = fields.DateTime()
    actor_id = fields.Integer(allow_none=True)
    actor = fields.String()
    action = fields.String()
    target_type = fields.String()
    target_id = fields.String()
    domain_id = fields.Integer(allow_none=True)
    before = fields.Dict(allow_none=True)
    after = fields.Dict(allow_none=True)


class AuditQuerySchema(Schema):
    actor = text(32)
    action = text(64)
    action_prefix = text(64)
    target_type = text(32)
    target_id = text(64)
    domain_id = ident(query=True)
    since = fields.AwareDateTime(default_timezone=UTC)
    until = fields.AwareDateTime(default_timezone=UTC)
