from __future__ import annotations

from marshmallow import Schema, fields, validate

from portal.schemas import ChangeSchema, ident, text
from translations import N_


class LoginSchema(Schema):
    username = text(32, required=True)
    password = fields.String(required=True, validate=validate.Length(max=1024))


class TokenRequestSchema(LoginSchema):
    name = text(80, load_default="api")
    days = fields.Integer(strict=True, validate=validate.Range(min=1, max=3650), allow_none=True)


class NewTokenSchema(Schema):
    name = text(80, required=True)
    days = fields.Integer(strict=True, validate=validate.Range(min=1, max=3650), allow_none=True)


class TokenSchema(Schema):
    id = fields.Integer(dump_only=True)
    name = fields.String()
    prefix = fields.String()
    created_at = fields.DateTime()
    expires_at = fields.DateTime(allow_none=True)
    last_used_at = fields.DateTime(allow_none=True)


class TokenCreatedSchema(TokenSchema):
    token = fields.String(metadata={"description": "the secret: shown once, never again"})


class UserSchema(Schema):
    id = fields.Integer(dump_only=True)
    username = fields.String()
    display_name = fields.String()
    email = fields.String()
    is_platform_admin = fields.Boolean()
    active = fields.Boolean()
    created_at = fields.DateTime()
    home_domain_id = fields.Integer(
        dump_only=True,
        allow_none=True,
        metadata={"description": "the domain whose admins manage the account (none: platform)"},
    )


class UserCreateSchema(Schema):
    username = text(
        32,
        required=True,
        validate=validate.Regexp(
            r"^[a-z_][a-z0-9_-]{0,31}$",
            error=N_(
                "A Unix user name: a lower-case letter or _, then up to 31 lower-case "
                "letters, digits, _ or -."
            ),
        ),
    )
    password = fields.String(validate=validate.Length(max=1024))
    display_name = text(120)
    email = fields.Email(validate=validate.Length(max=254))
    is_platform_admin = fields.Boolean()
    project_id = ident(
        metadata={"description": "the project the user joins (required from domain admins)"}
    )
    role_id = ident(metadata={"description": "their role in it (default: member)"})


class UserCreatedSchema(UserSchema):
    password = fields.String(
        allow_none=True, metadata={"description": "the generated password, shown once"}
    )


class UserUpdateSchema(ChangeSchema):
    display_name = text(120)
    email = fields.Email(validate=validate.Length(max=254))
    is_platform_admin = fields.Boolean()
    active = fields.Boolean()


class UserQuerySchema(Schema):
    q = text(120, metadata={"description": "part of the user name, name or e-mail"})


class PasswordChangeSchema(Schema):
    current_password = fields.String(required=True, validate=validate.Length(max=1024))
    new_password = fields.String(required=True, validate=validate.Length(max=1024))


class PasswordResetSchema(Schema):
    password = fields.String(validate=validate.Length(max=1024))


class PasswordSchema(Schema):
    password = fields.String()
