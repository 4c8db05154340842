"""The alert API's bodies: rules and channels as accounting's schemas read them (one
validation for the YAML file and the API), answers with states and masked credentials."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from accounting.alert_rules import Level, ScopeSchema
from portal.alerts.service import ChannelDocument, RuleDocument


class RuleIn(RuleDocument):
    """A rule: ``query`` (``usage`` or ``metric``), ``comparator``, ``threshold``, ``for``,
    ``scope``, ``severity``, ``channels``."""


class ChannelIn(ChannelDocument):
    """A channel; ``scope`` says whose it is (the caller's own tenants)."""

    scope = fields.Nested(ScopeSchema, load_default=lambda: {"level": "platform", "name": ""})


class SubjectStateSchema(Schema):
    subject = fields.String()
    state = fields.String(metadata={"description": "pending or firing"})
    since = fields.AwareDateTime()
    value = fields.Float()


class RuleOut(Schema):
    name = fields.String()
    query = fields.Dict()
    comparator = fields.String()
    threshold = fields.Float()
    for_ = fields.Integer(data_key="for", attribute="for", metadata={"description": "seconds"})
    scope = fields.Dict()
    severity = fields.String()
    channels = fields.List(fields.String())
    state = fields.String(metadata={"description": "ok, pending or firing (its worst subject)"})
    subjects = fields.List(fields.Nested(SubjectStateSchema))
    created_by = fields.String()
    updated_at = fields.AwareDateTime()


class ChannelOut(Schema):
    name = fields.String()
    type = fields.String()
    scope = fields.Dict()
    recipients = fields.List(fields.String())
    roles = fields.List(fields.String())
    url = fields.String(metadata={"description": "masked"})
    secret = fields.String(metadata={"description": "masked; empty when none is set"})
    format = fields.String()
    urgent = fields.Boolean()


class DeliveryOut(Schema):
    rule = fields.String()
    subject = fields.String()
    scope_level = fields.String(validate=validate.OneOf(list(Level)))
    scope_name = fields.String()
    channel = fields.String()
    kind = fields.String(metadata={"description": "fire or recover"})
    attempt = fields.Integer()
    ok = fields.Boolean()
    http_status = fields.Integer(allow_none=True)
    error = fields.String()
    at = fields.AwareDateTime()


class DeliveryQuery(Schema):
    limit = fields.Integer(load_default=100, validate=validate.Range(1, 1000))
