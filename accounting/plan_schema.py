"""The price plan document: its marshmallow schema, the validated :class:`PlanSpec` and the
canonical document (:func:`normalise`). See :mod:`accounting.plans`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Final

import yaml
from marshmallow import (
    RAISE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from translations import N_, Message

RESOURCES: Final = ("gpu", "npu", "cpu", "mem")
MAX_MONEY: Final = Decimal(1_000_000_000)
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_CENT = Decimal("0.01")
_NAME_RULE = N_("Only letters, digits, '.', '_' and '-', starting with a letter or digit.")

#: a field's message: a marked English text (a msgid), a sentence with values, or
#: marshmallow's own English (which the portal translates as it translates the library's)
Text = str | Message


class PlanError(ValueError):
    """A plan document or account change that cannot be applied; ``errors`` maps each field
    path (``prices[1].rate``) to its messages, each in any language (``str()``: English)."""

    def __init__(self, errors: Mapping[str, Sequence[Text]]) -> None:
        self.errors: dict[str, list[Text]] = {k: list(v) for k, v in errors.items()}
        super().__init__("; ".join(f"{k}: {m}" for k, ms in self.errors.items() for m in ms))


class MoneyField(fields.Field[Decimal]):
    """A non-negative Decimal with at most 6 places, from a string or an integer."""

    default_error_messages = {  # noqa: RUF012 (marshmallow's own class attribute)
        "float": N_(
            'Must be a decimal string such as "12.50" or an integer, not a float (floats are '
            "not exact)."
        ),
        "invalid": N_('Must be a decimal string such as "12.50" or an integer.'),
        "range": N_("Must be at least 0 and at most 1,000,000,000."),
        "places": N_("At most 6 decimal places."),
    }

    # what the OpenAPI document states: a decimal string in range (an integer is taken too)
    DOCUMENTED: ClassVar[dict[str, str]] = {
        "type": "string",
        "pattern": r"^([0-9]{1,9}([.][0-9]{1,6})?|1000000000([.]0{1,6})?)$",
        "example": "12.50",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs["metadata"] = {**self.DOCUMENTED, **kwargs.get("metadata", {})}
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Decimal:
        if isinstance(value, float):
            raise self.make_error("float")
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self.make_error("invalid")
        try:
            d = Decimal(value.strip() if isinstance(value, str) else value)
        except InvalidOperation as exc:
            raise self.make_error("invalid") from exc
        if not d.is_finite():
            raise self.make_error("invalid")
        if not Decimal(0) <= d <= MAX_MONEY:
            raise self.make_error("range")
        if d != d.quantize(Decimal("0.000001")):
            raise self.make_error("places")
        return d if d else Decimal(0)  # "-0" is 0

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else money_text(value)


def money_text(d: Decimal) -> str:
    """The canonical text of an amount: no trailing zeros past the cents ("12.00", "0.005")."""
    d = d.normalize()
    if d.as_tuple().exponent > -2:  # type: ignore[operator]
        d = d.quantize(_CENT)
    return format(d, "f")


class _Whole(validate.Regexp):
    """A pattern the whole value matches: ``$`` alone lets a trailing newline through. (The
    pattern is published in the OpenAPI document as it is.)"""

    # str only (the base also takes bytes); re.fullmatch: Pattern.fullmatch is typed for bytes here
    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or re.fullmatch(str(self.regex.pattern), value) is None:
            raise ValidationError(self._format_error(value))
        return value


class _Strict(Schema):
    class Meta:
        unknown = RAISE


class _Rate(_Strict):
    resource = fields.String(required=True, validate=validate.OneOf(RESOURCES))
    model = fields.String(
        load_default="",
        validate=[
            validate.Length(max=32),
            # ':' for the typed accelerator cards metered with the NPUs, e.g. "mlu:mlu370".
            _Whole(r"^[A-Za-z0-9._:-]*$", error=N_("Only letters, digits, '.', '_', ':' and '-'.")),
        ],
    )
    rate = MoneyField(required=True)

    @validates_schema
    def _any_model(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("resource") in ("cpu", "mem") and data.get("model"):
            raise ValidationError(
                N_("CPU and memory rates apply to every node: leave the model out."), "model"
            )


class _Package(_Strict):
    name = fields.String(
        required=True, validate=[validate.Length(1, 64), _Whole(_NAME, error=_NAME_RULE)]
    )
    monthly_fee = MoneyField(required=True)
    included_card_hours = MoneyField(load_default=Decimal(0))


class PlanSchema(_Strict):
    """The plan document; loading it gives a :class:`PlanSpec`."""

    name = fields.String(
        required=True, validate=[validate.Length(1, 64), _Whole(_NAME, error=_NAME_RULE)]
    )
    currency = fields.String(
        load_default="CNY",
        validate=_Whole(
            r"^[A-Z]{3}$", error=N_("Must be 3 upper-case letters (ISO 4217), such as CNY.")
        ),
    )
    storage_price = MoneyField(load_default=Decimal(0))
    prices = fields.List(fields.Nested(_Rate), required=True, validate=validate.Length(min=1))
    packages = fields.List(fields.Nested(_Package), load_default=list)
    #: the first and last day the plan bills (ISO dates); left out: no limit
    effective_from = fields.Date(load_default=None, allow_none=True)
    effective_until = fields.Date(load_default=None, allow_none=True)

    @validates_schema
    def _no_duplicates(self, data: dict[str, Any], **kwargs: Any) -> None:
        errors: dict[str, Any] = {}
        seen: dict[tuple[str, str], int] = {}
        for i, p in enumerate(data.get("prices", [])):
            key = (p["resource"], p["model"])
            if key in seen:
                errors.setdefault("prices", {})[i] = [
                    Message.of(
                        N_("A second rate for %(what)s: the first is rate %(first)s."),
                        what=f"{key[0]}:{key[1]}" if key[1] else key[0],
                        first=seen[key] + 1,
                    )
                ]
            seen.setdefault(key, i)
        names: dict[str, int] = {}
        for i, k in enumerate(data.get("packages", [])):
            if k["name"] in names:
                errors.setdefault("packages", {})[i] = {
                    "name": [
                        Message.of(
                            N_("A second package named %(name)s: package names must differ."),
                            name=k["name"],
                        )
                    ]
                }
            names.setdefault(k["name"], i)
        first, last = data.get("effective_from"), data.get("effective_until")
        if first and last and last < first:
            errors["effective_until"] = [N_("The last day may not be before the first day.")]
        if errors:
            raise ValidationError(errors)

    @post_load
    def _spec(self, data: dict[str, Any], **kwargs: Any) -> PlanSpec:
        return PlanSpec(
            name=data["name"],
            currency=data["currency"],
            storage_price=data["storage_price"],
            effective_from=data["effective_from"],
            effective_until=data["effective_until"],
            prices=tuple(
                sorted(
                    (RateSpec(p["resource"], p["model"], p["rate"]) for p in data["prices"]),
                    key=RateSpec.order,
                )
            ),
            packages=tuple(
                sorted(
                    (
                        PackageSpec(k["name"], k["monthly_fee"], k["included_card_hours"])
                        for k in data["packages"]
                    ),
                    key=lambda k: k.name,
                )
            ),
        )


@dataclass(frozen=True, slots=True)
class RateSpec:
    resource: str
    model: str
    rate: Decimal

    def order(self) -> tuple[int, bool, str]:
        # gpu, npu, cpu, mem; a resource's own models before its "any model" rate
        return RESOURCES.index(self.resource), self.model == "", self.model


@dataclass(frozen=True, slots=True)
class PackageSpec:
    name: str
    monthly_fee: Decimal
    included_card_hours: Decimal


@dataclass(frozen=True, slots=True)
class PlanSpec:
    """A validated plan, in its canonical order."""

    name: str
    currency: str
    storage_price: Decimal
    prices: tuple[RateSpec, ...]
    packages: tuple[PackageSpec, ...]
    effective_from: date | None = None
    effective_until: date | None = None

    def document(self) -> dict[str, Any]:
        """The canonical document: money as text, a rate for any model without ``model``,
        the effective dates (ISO) only where the plan has them."""
        dates = {
            k: v.isoformat()
            for k, v in (
                ("effective_from", self.effective_from),
                ("effective_until", self.effective_until),
            )
            if v is not None
        }
        return {
            "name": self.name,
            "currency": self.currency,
            **dates,
            "storage_price": money_text(self.storage_price),
            "prices": [
                {"resource": p.resource, **({"model": p.model} if p.model else {})}
                | {"rate": money_text(p.rate)}
                for p in self.prices
            ],
            "packages": [
                {
                    "name": k.name,
                    "monthly_fee": money_text(k.monthly_fee),
                    "included_card_hours": money_text(k.included_card_hours),
                }
                for k in self.packages
            ],
        }


def _paths(messages: Any, path: str = "") -> dict[str, list[Text]]:
    """marshmallow's nested messages -> ``{"prices[1].rate": [...]}``."""
    if isinstance(messages, Mapping):
        out: dict[str, list[Text]] = {}
        for key, sub in messages.items():
            if key == "_schema":
                child = path
            elif isinstance(key, int):
                child = f"{path}[{key}]"
            else:
                child = f"{path}.{key}" if path else str(key)
            for k, v in _paths(sub, child).items():
                out.setdefault(k, []).extend(v)
        return out
    if isinstance(messages, list | tuple) and all(isinstance(m, str | Message) for m in messages):
        return {path or "document": list(messages)}
    if isinstance(messages, list | tuple):
        out = {}
        for m in messages:
            for k, v in _paths(m, path).items():
                out.setdefault(k, []).extend(v)
        return out
    return {path or "document": [messages if isinstance(messages, Message) else str(messages)]}


def load_plan(raw: Any) -> PlanSpec:
    """Validate a plan document (a mapping); every problem, by field path, in one error."""
    if isinstance(raw, PlanSpec):
        return raw
    if not isinstance(raw, Mapping):
        raise PlanError({"document": [N_("A plan document must be a mapping of its fields.")]})
    try:
        spec: PlanSpec = PlanSchema().load(dict(raw))
    except ValidationError as exc:
        raise PlanError(_paths(exc.messages)) from exc
    return spec


def parse_plan(text: str) -> PlanSpec:
    """:func:`load_plan` of YAML (or JSON, which YAML reads too)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = Message.of(N_("This is not valid YAML or JSON: %(problem)s"), problem=exc)
        raise PlanError({"document": [problem]}) from exc
    return load_plan(raw)


def normalise(raw: Any) -> dict[str, Any]:
    """A document as :func:`plan_document` gives it back after :func:`apply_plan`."""
    return load_plan(raw).document()
