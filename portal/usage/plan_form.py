"""The price plan as a form: rates per GPU and NPU model, CPU core-hours and memory, packages,
the currency and the days it is in effect, turned into the plan document accounting validates
(:mod:`accounting.plan_schema`) and back. Accounting's errors, named by the document's field
paths (``prices[2].rate``), are put on the form's fields they came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from flask_wtf import FlaskForm
from wtforms import (
    DateField,
    FieldList,
    Form,
    FormField,
    HiddenField,
    SelectField,
    StringField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.fields.core import Field
from wtforms.validators import DataRequired, Length, Optional

from portal.i18n import lazy_gettext

#: blank rows offered after a plan's own, to add rates and packages without a script
SPARE_RATES, SPARE_PACKAGES = 2, 1
CURRENCIES = [SelectChoice("CNY", lazy_gettext("CNY (yuan)"))]


def _money(label: Any) -> StringField:
    return StringField(label, validators=[Length(max=24)], render_kw={"inputmode": "decimal"})


class ModelRate(Form):
    """A rate per card-hour for one card model; no model: every other model."""

    model = StringField(lazy_gettext("Card model"), validators=[Length(max=32)])
    rate = _money(lazy_gettext("Rate per card-hour"))


class PackageRow(Form):
    name = StringField(lazy_gettext("Package name"), validators=[Length(max=64)])
    monthly_fee = _money(lazy_gettext("Monthly fee"))
    included_card_hours = _money(lazy_gettext("Card-hours included"))


_PACKAGE_FIELDS = ("name", "monthly_fee", "included_card_hours")


class PlanForm(FlaskForm):
    name = StringField(lazy_gettext("Plan name"), validators=[DataRequired(), Length(1, 64)])
    currency = SelectField(lazy_gettext("Currency"), choices=CURRENCIES)
    effective_from = DateField(lazy_gettext("In effect from"), validators=[Optional()])
    effective_until = DateField(lazy_gettext("In effect until"), validators=[Optional()])
    gpu = FieldList(FormField(ModelRate), label=lazy_gettext("GPU card-hour rates"))
    npu = FieldList(FormField(ModelRate), label=lazy_gettext("NPU card-hour rates"))
    cpu_rate = _money(lazy_gettext("Rate per CPU core-hour"))
    mem_rate = _money(lazy_gettext("Rate per memory GiB-hour"))
    storage_price = _money(lazy_gettext("Storage, per GiB-month"))
    packages = FieldList(FormField(PackageRow), label=lazy_gettext("Packages"))
    # the plan the form was opened on ("" for a new one) and that plan's version then
    opened = HiddenField(validators=[Length(max=200)])
    version = HiddenField(validators=[Length(max=64)])


def form_data(doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the form starts from: a stored plan's document, or a new CNY plan; with blank
    rows to add rates and packages."""
    doc = doc or {"name": "", "currency": "CNY", "prices": [], "packages": []}
    prices = doc.get("prices", [])

    def rates(resource: str) -> list[dict[str, str]]:
        own = [
            {"model": p.get("model", ""), "rate": p["rate"]}
            for p in prices
            if p["resource"] == resource
        ]
        return own + [{"model": "", "rate": ""}] * SPARE_RATES

    single = {p["resource"]: p["rate"] for p in prices if p["resource"] in ("cpu", "mem")}
    blank = {"name": "", "monthly_fee": "", "included_card_hours": ""}
    return {
        "name": doc.get("name", ""),
        "currency": doc.get("currency", "CNY"),
        "effective_from": _day(doc.get("effective_from")),
        "effective_until": _day(doc.get("effective_until")),
        "gpu": rates("gpu"),
        "npu": rates("npu"),
        "cpu_rate": single.get("cpu", ""),
        "mem_rate": single.get("mem", ""),
        "storage_price": doc.get("storage_price", ""),
        "packages": [*doc.get("packages", []), *([blank] * SPARE_PACKAGES)],
    }


def _day(text: str | None) -> date | None:
    return date.fromisoformat(text) if text else None


def with_currency(form: PlanForm) -> PlanForm:
    """A plan in another currency (made through the API) keeps it as a choice."""
    current = form.currency.data
    if current and current not in {c.value for c in CURRENCIES}:
        form.currency.choices = [*CURRENCIES, SelectChoice(current)]
    return form


@dataclass
class Document:
    """The plan document a form makes, and which field each of its paths came from."""

    doc: dict[str, Any]
    fields: dict[str, Field] = field(default_factory=dict)


def _text(f: Field) -> str:
    return str(f.data or "").strip()


def document(form: PlanForm) -> Document:
    """The plan document of a submitted form (blank rows left out)."""
    out = Document({"name": _text(form.name), "currency": form.currency.data or "CNY"})
    for key in ("effective_from", "effective_until"):
        day = getattr(form, key).data
        if day is not None:
            out.doc[key] = day.isoformat()
        out.fields[key] = getattr(form, key)
    if _text(form.storage_price):
        out.doc["storage_price"] = _text(form.storage_price)
    out.fields.update(name=form.name, currency=form.currency, storage_price=form.storage_price)
    prices: list[dict[str, str]] = []
    for resource in ("gpu", "npu"):
        for row in getattr(form, resource):
            model, rate = _text(row.form.model), _text(row.form.rate)
            if model or rate:
                _add_rate(out, prices, {"resource": resource, "model": model, "rate": rate}, row)
    for resource, f in (("cpu", form.cpu_rate), ("mem", form.mem_rate)):
        if _text(f):
            _add_rate(out, prices, {"resource": resource, "rate": _text(f)}, f)
    out.doc["prices"] = prices
    out.fields["prices"] = form.gpu
    packages: list[dict[str, str]] = []
    for row in form.packages:
        values = {k: _text(getattr(row.form, k)) for k in _PACKAGE_FIELDS}
        if any(values.values()):
            i = len(packages)
            packages.append({k: v for k, v in values.items() if v})
            out.fields[f"packages[{i}]"] = row.form.name
            for k in values:
                out.fields[f"packages[{i}].{k}"] = getattr(row.form, k)
    out.doc["packages"] = packages
    out.fields["packages"] = form.packages
    return out


def _add_rate(out: Document, prices: list[dict[str, str]], rate: dict[str, str], at: Any) -> None:
    i = len(prices)
    if not rate.get("model"):
        rate.pop("model", None)
    prices.append(rate)
    sub = getattr(at, "form", None)
    rate_field = sub.rate if sub is not None else at
    out.fields[f"prices[{i}]"] = rate_field
    out.fields[f"prices[{i}].rate"] = rate_field
    out.fields[f"prices[{i}].resource"] = rate_field
    out.fields[f"prices[{i}].model"] = sub.model if sub is not None else at


def place_errors(made: Document, errors: Mapping[str, Sequence[str]]) -> list[str]:
    """Each error onto the field its path came from; what no field shows is returned (for
    the top of the form)."""
    rest = []
    for path, messages in errors.items():
        target = made.fields.get(path)
        if target is None or isinstance(target, FieldList):
            rest += list(messages)
            continue
        target.errors = [*list(target.errors or []), *messages]
    return rest
