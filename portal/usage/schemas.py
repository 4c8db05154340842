from __future__ import annotations

from dataclasses import asdict
from datetime import UTC
from decimal import Decimal
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from accounting import labels
from accounting.export import FORMATS
from accounting.report import Dim, Report
from accounting.timeline import Step
from portal.i18n import current
from portal.schemas import ChangeSchema
from portal.usage.windows import Window
from translations import N_

DIMS = [d.value for d in Dim]


def _decimal() -> fields.String:
    """An exact decimal, sent as a string ("4.5000")."""
    return fields.String(metadata={"description": "an exact decimal, as a string"})


def _month(*, required: bool = False) -> fields.String:
    return fields.String(
        required=required,
        validate=validate.Regexp(
            r"^(19[7-9][0-9]|2[0-9]{3})-(0[1-9]|1[0-2])$",
            error=N_("Must be a month written YYYY-MM, from 1970 to 2999."),
        ),
    )


def _name(what: str) -> fields.String:
    return fields.String(
        validate=validate.Length(1, 64), metadata={"description": f"only this {what}"}
    )


class UsageQuerySchema(Schema):
    month = _month()
    from_ = fields.AwareDateTime(default_timezone=UTC, data_key="from")
    to = fields.AwareDateTime(default_timezone=UTC)
    by = fields.String(load_default="project", validate=validate.OneOf(DIMS))
    domain = _name("domain")
    project = _name("project")
    user = _name("user")


class ExportQuerySchema(UsageQuerySchema):
    format = fields.String(required=True, validate=validate.OneOf(FORMATS))


class SeriesQuerySchema(UsageQuerySchema):
    by = fields.String(validate=validate.OneOf(DIMS), metadata={"description": "left out: all"})
    step = fields.String(
        validate=validate.OneOf([s.value for s in Step]),
        metadata={"description": "hour, day or month; left out: by the period's length"},
    )


class JobsQuerySchema(UsageQuerySchema):
    limit = fields.Integer(load_default=200, validate=validate.Range(1, 1000))


class WindowQuerySchema(Schema):
    """A usage page's period: a day, week or month holding ``day`` (the current month when
    none), or an own period from ``first`` to ``last``; and what the top page groups by."""

    window = fields.String(load_default="month", validate=validate.OneOf([w.value for w in Window]))
    day = fields.Date()
    month = _month()  # YYYY-MM: that month (as links from before the windows have it)
    first = fields.Date()
    last = fields.Date()
    by = fields.String(load_default="project", validate=validate.OneOf(DIMS))


class SeriesSchema(Schema):
    """Card-hours per bucket: ``values[i][j]`` is group ``keys[i]`` in bucket ``starts[j]``;
    the groups past the largest few summed in ``other``."""

    step = fields.String()
    starts = fields.List(fields.DateTime())
    keys = fields.List(fields.String())
    values = fields.List(fields.List(_decimal()))
    other = fields.List(_decimal(), allow_none=True)


class JobUseSchema(Schema):
    cluster = fields.String()
    job_id = fields.Integer()
    user = fields.String()
    project = fields.String()
    pool = fields.String()
    state = fields.String()
    start = fields.DateTime()
    end = fields.DateTime()
    finished = fields.Boolean()
    gpu_model = fields.String()
    gpu_card_hours = _decimal()
    npu_model = fields.String()
    npu_card_hours = _decimal()
    cpu_hours = _decimal()
    wait_min = _decimal()


class UsageLineSchema(Schema):
    key = fields.String()
    jobs = fields.Integer()
    gpu_card_hours = _decimal()
    npu_card_hours = _decimal()
    cpu_hours = _decimal()
    mem_gib_hours = _decimal()
    avg_wait_min = _decimal()
    #: the cards' energy of the jobs that ended in the period, beside their card-hours
    kwh = _decimal()


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
    description = fields.String(metadata={"description": "the line in English"})
    label = fields.Function(
        lambda line: labels.item(current(), line),
        metadata={"description": "the line in the reader's language"},
    )
    item = fields.String(metadata={"description": "package, gpu, npu, cpu, mem or storage"})
    model = fields.String(metadata={"description": "the card model, or the package's name"})
    in_package = fields.Boolean()
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
    kind = fields.String(metadata={"description": "topup or bill"})
    bill_id = fields.Integer(allow_none=True)
    amount = _decimal()
    balance_after = _decimal()
    note = fields.String()
    actor = fields.String()


class ThisMonthSchema(Schema):
    month = fields.String(metadata={"description": "The month under way, YYYY-MM (UTC)."})
    total = fields.String(
        allow_none=True,
        metadata={"description": "Its charges so far (what its bill would be now), exact."},
    )
    mine = fields.String(
        allow_none=True,
        metadata={"description": "The caller's share (their jobs at the plan's rates), exact."},
    )
    why = fields.String(metadata={"description": "Why the month cannot be priced."})


class BillingSchema(Schema):
    tenant = fields.String()
    plan = fields.String()
    currency = fields.String()
    package = fields.String(allow_none=True)
    balance = _decimal()
    this_month = fields.Nested(ThisMonthSchema)
    full = fields.Boolean(
        metadata={"description": "Whether bills and the ledger are shown: the managers' view."}
    )
    bills = fields.List(fields.Nested(BillSchema))
    ledger = fields.List(fields.Nested(LedgerEntrySchema))


class BillingAccountSchema(Schema):
    tenant = fields.String()
    balance = _decimal()


def _cents(value: Decimal) -> None:
    # a plain function, not validate.Range: apispec would publish Decimal bounds as strings
    if not Decimal(0) < value <= Decimal(1_000_000_000):
        raise ValidationError(N_("Must be more than 0 and at most 1,000,000,000."))
    if value != value.quantize(Decimal("0.01")):
        raise ValidationError(N_("At most 2 decimal places."))


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
    effective_from = fields.String(metadata={"description": "first day billed (ISO date)"})
    effective_until = fields.String(metadata={"description": "last day billed (ISO date)"})
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
            raise ValidationError(N_("Give a plan, a package or both."))
