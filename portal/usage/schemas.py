from __future__ import annotations

from datetime import UTC
from decimal import Decimal
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from accounting.export import FORMATS
from accounting.report import Dim, Line, Report

DIMS = [d.value for d in Dim]


class UsageQuerySchema(Schema):
    month = fields.String(
        validate=validate.Regexp(r"^\d{4}-(0[1-9]|1[0-2])$", error="month must be YYYY-MM")
    )
    from_ = fields.AwareDateTime(default_timezone=UTC, data_key="from")
    to = fields.AwareDateTime(default_timezone=UTC)
    by = fields.String(load_default="project", validate=validate.OneOf(DIMS))


class ExportQuerySchema(UsageQuerySchema):
    format = fields.String(required=True, validate=validate.OneOf(FORMATS))


class LineSchema(Schema):
    key = fields.String()
    jobs = fields.Integer()
    gpu_card_hours = fields.Decimal(as_string=True)
    npu_card_hours = fields.Decimal(as_string=True)
    cpu_hours = fields.Decimal(as_string=True)
    mem_gib_hours = fields.Decimal(as_string=True)
    avg_wait_min = fields.Decimal(as_string=True)


class UtilisationSchema(Schema):
    pool = fields.String()
    gpu_cards = fields.Integer()
    npu_cards = fields.Integer()
    gpu_card_hours = fields.Decimal(as_string=True)
    npu_card_hours = fields.Decimal(as_string=True)
    ratio = fields.Decimal(as_string=True)


class ReportSchema(Schema):
    start = fields.DateTime()
    end = fields.DateTime()
    by = fields.String()
    lines = fields.List(fields.Nested(LineSchema))
    total = fields.Nested(LineSchema)
    utilisation = fields.List(fields.Nested(UtilisationSchema))
    top_users = fields.List(fields.Nested(LineSchema))


def args_of(loaded: dict[str, Any]) -> dict[str, Any]:
    """Schema output -> service arguments (``from_`` is ``from``)."""
    out = dict(loaded)
    if "from_" in out:
        out["from"] = out.pop("from_")
    return out


def report_data(rep: Report) -> dict[str, Any]:
    def line(ln: Line) -> dict[str, Any]:
        return {
            "key": ln.key,
            "jobs": ln.jobs,
            "gpu_card_hours": ln.gpu_card_hours,
            "npu_card_hours": ln.npu_card_hours,
            "cpu_hours": ln.cpu_hours,
            "mem_gib_hours": ln.mem_gib_hours,
            "avg_wait_min": ln.avg_wait_min,
        }

    return {
        "start": rep.start,
        "end": rep.end,
        "by": rep.by.value,
        "lines": [line(ln) for ln in rep.lines],
        "total": line(rep.total),
        "utilisation": list(rep.utilisation),
        "top_users": [line(ln) for ln in rep.top_users],
    }


class BillLineSchema(Schema):
    description = fields.String()
    quantity = fields.Decimal(as_string=True)
    unit_price = fields.Decimal(as_string=True)
    amount = fields.Decimal(as_string=True)


class BillSchema(Schema):
    id = fields.Integer()
    month = fields.String()
    total = fields.Decimal(as_string=True)
    lines = fields.List(fields.Nested(BillLineSchema))


class LedgerSchema(Schema):
    at = fields.DateTime()
    kind = fields.String()
    amount = fields.Decimal(as_string=True)
    balance_after = fields.Decimal(as_string=True)
    note = fields.String()
    actor = fields.String()


class BillingSchema(Schema):
    tenant = fields.String()
    plan = fields.String()
    currency = fields.String()
    package = fields.String(allow_none=True)
    balance = fields.Decimal(as_string=True)
    bills = fields.List(fields.Nested(BillSchema))
    ledger = fields.List(fields.Nested(LedgerSchema))


class AccountSchema(Schema):
    tenant = fields.String()
    balance = fields.Decimal(as_string=True)


def _cents(value: Decimal) -> None:
    if value != value.quantize(Decimal("0.01")):
        raise ValidationError("at most 2 decimal places")


class TopUpSchema(Schema):
    class Meta:
        unknown = RAISE

    amount = fields.Decimal(
        required=True,
        validate=[
            validate.Range(min=Decimal("0.01"), max=Decimal("1000000000")),
            _cents,
        ],
    )
    note = fields.String(load_default="", validate=validate.Length(max=255))


class PostBillSchema(Schema):
    class Meta:
        unknown = RAISE

    month = fields.String(
        required=True,
        validate=validate.Regexp(r"^\d{4}-(0[1-9]|1[0-2])$", error="month must be YYYY-MM"),
    )
