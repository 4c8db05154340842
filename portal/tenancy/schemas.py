from __future__ import annotations

from marshmallow import Schema, fields, validate

from portal.identity.schemas import UserSchema
from portal.schemas import ChangeSchema, ident, name, text
from portal.tenancy.service import ACCOUNT_RULE

# a Slurm account: domains and projects are accounts (portal/tenancy/service.py checks the rest)
ACCOUNT = validate.Regexp(r"^[a-z][a-z0-9_-]{1,31}$", error=ACCOUNT_RULE)


class DomainSchema(Schema):
    id = fields.Integer(dump_only=True)
    name = name(32, validate=ACCOUNT)
    description = text(255)


class DomainUpdateSchema(ChangeSchema):
    description = text(255)


class ProjectSchema(Schema):
    id = fields.Integer(dump_only=True)
    domain_id = ident(required=True)
    name = name(32, validate=ACCOUNT)
    description = text(255)
    qos = text(255, metadata={"description": "QOS members may use, default first"})


class ProjectUpdateSchema(ChangeSchema):
    description = text(255)
    qos = text(255)


class ProjectQuerySchema(Schema):
    domain_id = ident(query=True)


class MemberSchema(Schema):
    id = fields.Integer(dump_only=True)
    project_id = fields.Integer(dump_only=True)
    user = fields.Nested(UserSchema, dump_only=True)
    role_id = ident(required=True)
    username = text(32, required=True, load_only=True)


class MemberUpdateSchema(ChangeSchema):
    role_id = ident(required=True)


class AdminSchema(Schema):
    id = fields.Integer(dump_only=True)
    domain_id = fields.Integer(dump_only=True)
    user = fields.Nested(UserSchema, dump_only=True)
    username = text(32, required=True, load_only=True)


class GroupSchema(Schema):
    id = fields.Integer(dump_only=True)
    domain_id = ident(required=True)
    name = name(64)
    description = text(255)


class GroupUpdateSchema(Schema):
    name = name(64, required=False)
    description = text(255)


class GroupQuerySchema(Schema):
    domain_id = ident(query=True)


class GroupMemberSchema(Schema):
    user = fields.Nested(UserSchema, dump_only=True)
    username = text(32, required=True, load_only=True)


class GrantSchema(Schema):
    project_id = ident(required=True)
    role_id = ident(required=True)
