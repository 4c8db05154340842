from __future__ import annotations

from dataclasses import asdict
from datetime import UTC
from decimal import Decimal
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from accounting.export import FORMATS
from accounting.report import Dim, Report
from portal.schemas import ChangeSchema

DIMS = [d.value for d in Dim]


def _month(*, required: bool = False) -> fields.String:
    return fields.String(
        required=required,
        validate=validate.Regexp(
            r"^(19[7-9][0-9]|2[0-9]{3})-(0[1-9]|1[0-2])$", error="month must be YYYY-MM, 1970-2999"
        ),
    )


class UsageQuerySchema(Schema):
    month = _month()
    from_ = fields.AwareDateTime(default_timezone=UTC, data_key="from")
    to = fields.AwareDateTime(default_timezone=UTC)
    by = fields.String(load_default="project", validate=validate.OneOf(DIMS))


class ExportQuerySchema(UsageQuerySchema):
    format = fields.String(required=True, validate=validate.OneOf(FORMATS))


def _decimal() -> fields.String:
    """An exact decimal, sent as a string ("4.5000")."""
    return fields.String(metadata={"description": "an exact decimal, as a string"})


class UsageLineSchema(Schema):
    key = fields.String()
    jobs = fields.Integer()
    gpu_card_hours = _decimal()
    npu_card_hours = _decimal()
    cpu_hours = _decimal()
    mem_gib_hours = _decimal()
    avg_wait_min = _decimal()


class PoolUtilisationSchema(Schema):
    pool = fields.String()
    gpu_cards = fields.Integer()
    npu_cards = fields.Integer()
    gpu_card_hours = _decimal()
    npu_card_hours = _decimal()
    ratio = _decimal()


class UsageReportSchema(Schema):
    start = fields.DateTime()
    end = fields.DateTime()
    by = fields.String()
    lines = fields.List(fields.Nested(UsageLineSchema))
    total = fields.Nested(UsageLineSchema)
    utilisation = fields.List(fields.Nested(PoolUtilisationSchema))
    top_users = fields.List(fields.Nested(UsageLineSchema))


def args_of(loaded: dict[str, Any]) -> dict[str, Any]:
    """Schema output -> service arguments (``from_`` is ``from``)."""
    out = dict(loaded)
    if "from_" in out:
        out["from"] = out.pop("from_")
    return out


def report_data(rep: Report) -> dict[str, Any]:
    return {
        "start": rep.start,
        "end": rep.end,
        "by": rep.by.value,
        "lines": [asdict(ln) for ln in rep.lines],
        "total": asdict(rep.total),
        "utilisation": list(rep.utilisation),
        "top_users": [asdict(ln) for ln in rep.top_users],
    }


class BillLineSchema(Schema):
    description = fields.String()
    quantity = _decimal()
    unit_price = _decimal()
    amount = _decimal()


class BillSchema(Schema):
    id = fields.Integer()
    month = fields.String()
    total = _decimal()
    lines = fields.List(fields.Nested(BillLineSchema))


class LedgerEntrySchema(Schema):
    at = fields.DateTime()
    kind = fields.String()
    amount = _decimal()
    balance_after = _decimal()
    note = fields.String()
    actor = fields.String()


class BillingSchema(Schema):
    tenant = fields.String()
    plan = fields.String()
    currency = fields.String()
    package = fields.String(allow_none=True)
    balance = _decimal()
    bills = fields.List(fields.Nested(BillSchema))
    ledger = fields.List(fields.Nested(LedgerEntrySchema))


class BillingAccountSchema(Schema):
    tenant = fields.String()
    balance = _decimal()


def _cents(value: Decimal) -> None:
    # a plain function, not validate.Range: apispec would publish Decimal bounds as strings
    if not Decimal(0) < value <= Decimal(1_000_000_000):
        raise ValidationError("must be more than 0 and at most 1,000,000,000")
    if value != value.quantize(Decimal("0.01")):
        raise ValidationError("at most 2 decimal places")


class TopUpSchema(Schema):
    class Meta:
        unknown = RAISE

    amount = fields.Decimal(
        required=True,
        validate=_cents,
        metadata={
            "description": "0.01 to 1,000,000,000, at most 2 decimal places",
            "minimum": 0,
            "exclusiveMinimum": True,
            "maximum": 1_000_000_000,
            "multipleOf": 0.01,
        },
    )
    note = fields.String(load_default="", validate=validate.Length(max=255))


class PostBillSchema(Schema):
    class Meta:
        unknown = RAISE

    month = _month(required=True)


class RateSchema(Schema):
    resource = fields.String()
    model = fields.String(metadata={"description": "left out: any model"})
    rate = _decimal()


class PackageSchema(Schema):
    name = fields.String()
    monthly_fee = _decimal()
    included_card_hours = _decimal()


class PricePlanSchema(Schema):
    """A price plan as its document (what PUT takes back), with the tenants on it."""

    name = fields.String()
    currency = fields.String()
    storage_price = _decimal()
    prices = fields.List(fields.Nested(RateSchema))
    packages = fields.List(fields.Nested(PackageSchema))
    accounts = fields.List(fields.String())


def _tenant_name() -> fields.String:
    return fields.String(
        required=True, validate=[validate.Length(1, 64), validate.Regexp(r"^[A-Za-z0-9._-]+$")]
    )


class OpenAccountSchema(Schema):
    class Meta:
        unknown = RAISE

    tenant = _tenant_name()
    plan = fields.String(required=True, validate=validate.Length(1, 64))
    package = fields.String(load_default=None, allow_none=True, validate=validate.Length(1, 64))


class ChangeAccountSchema(ChangeSchema):
    """Left out: unchanged; ``"package": null``: no package."""

    class Meta:
        unknown = RAISE

    plan = fields.String(validate=validate.Length(1, 64))
    package = fields.String(allow_none=True, validate=validate.Length(1, 64))

    @validates_schema
    def _something(self, data: dict[str, Any], **kwargs: Any) -> None:
        if not data:
            raise ValidationError("give plan and/or package")
