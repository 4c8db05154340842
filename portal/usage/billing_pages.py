"""Billing pages: the billing accounts one may see, with their balances, bills and income and
expense; for platform admins also the price plans, the form that opens an account, and on an
account's page the forms that top it up, post a month's bill and move it to another plan."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from flask import flash, redirect, render_template, url_for
from flask_babel import format_currency
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Regexp

from accounting import labels
from portal.errors import DomainError
from portal.i18n import current, gettext, lazy_gettext, money
from portal.pages import show_error
from portal.usage import billing, plans
from portal.usage.blueprint import bp
from portal.web import current_access, session

NO_PACKAGE = lazy_gettext("None: pay as you go")


@bp.app_template_filter("amount")
def amount(value: Decimal | str | int | None, currency: str = "CNY") -> str:
    """An amount of money in its currency, the reader's way (``¥1,234.50``, ``CN¥1,234.50``)."""
    if value is None or value == "":
        return "—"
    return str(format_currency(Decimal(str(value)), currency or "CNY"))


@bp.app_template_filter("decimal")
def to_decimal(value: Decimal | str | int) -> Decimal:
    """A plan document's money (text) as a number, to compute with."""
    return Decimal(str(value))


class AccountForm(FlaskForm):
    tenant = SelectField(lazy_gettext("Domain or project"))
    plan = SelectField(lazy_gettext("Price plan"))
    package = SelectField(lazy_gettext("Package"))


class TopUpForm(FlaskForm):
    amount = StringField(
        lazy_gettext("Amount (yuan)"),
        validators=[
            DataRequired(),
            Regexp(
                r"^\d{1,12}(\.\d{1,2})?$",
                message=lazy_gettext("A positive amount, with at most 2 decimals."),
            ),
        ],
    )
    note = StringField(lazy_gettext("Note"), validators=[Length(max=200)])


class BillForm(FlaskForm):
    month = StringField(
        lazy_gettext("Month (YYYY-MM)"),
        validators=[
            DataRequired(),
            Regexp(r"^\d{4}-(0[1-9]|1[0-2])$", message=lazy_gettext("Write the month as YYYY-MM.")),
        ],
    )


class SettingsForm(FlaskForm):
    plan = SelectField(lazy_gettext("Price plan"))
    package = SelectField(lazy_gettext("Package"))


#: the operator forms of one account's page, by the name the page and the routes use
_FORMS: dict[str, type[FlaskForm]] = {
    "topup": TopUpForm,
    "bill": BillForm,
    "settings": SettingsForm,
}


def _account_form() -> AccountForm:
    choices = plans.account_choices(session(), current_access())
    form = AccountForm()
    form.tenant.choices = choices["tenants"]
    form.plan.choices = choices["plans"]
    form.package.choices = [SelectChoice("", NO_PACKAGE), *choices["packages"]]
    return form


def _overview(form: AccountForm | None, status: int = 200) -> tuple[str, int]:
    access = current_access()
    admin = access.platform_admin
    page = render_template(
        "usage/billing_index.html",
        accounts=plans.account_rows(session(), access),
        plans=plans.plan_list(session(), access) if admin else [],
        form=(form or _account_form()) if admin else None,
        resource=labels.ITEMS,
    )
    return page, status


@bp.route("/usage/billing")
@login_required
def overview() -> tuple[str, int]:
    """The billing accounts one may see; for platform admins also the price plans."""
    return _overview(None)


@bp.route("/usage/billing/accounts", methods=["POST"])
@login_required
def open_account() -> Response | tuple[str, int]:
    current_access().require_platform_admin()
    form = _account_form()
    if not form.validate_on_submit():
        return _overview(form, 422 if form.errors.keys() - {"csrf_token"} else 400)
    tenant = form.tenant.data or ""
    try:
        plans.open_account(
            session(), current_access(), tenant, form.plan.data or "", form.package.data or None
        )
    except DomainError as exc:
        session().rollback()
        show_error(form, exc)
        return _overview(form, exc.status)
    flash(gettext("The billing account of %(tenant)s is open.", tenant=tenant), "info")
    return redirect(url_for(".bills", tenant=tenant))


@bp.route("/usage/billing/<string:tenant>")
@login_required
def bills(tenant: str) -> tuple[str, int]:
    return _account_page(tenant, {})


def _account_page(tenant: str, forms: dict[str, FlaskForm], status: int = 200) -> tuple[str, int]:
    """One billing account; for platform admins with the forms that top it up, post a month's
    bill and move it to another plan or package."""
    access = current_access()
    data = billing.view(session(), access, tenant)
    if access.platform_admin:
        forms = {name: forms.get(name) or form() for name, form in _FORMS.items()}
        _settings_choices(forms["settings"], data)
    else:
        forms = {}
    months = {b["id"]: b["month"] for b in data["bills"]}
    lines = {
        b["id"]: [(labels.item(current(), ln), ln) for ln in b["lines"]] for b in data["bills"]
    }
    return render_template(
        "usage/billing.html", b=data, forms=forms, months=months, lines=lines
    ), status


def _settings_choices(form: SettingsForm, data: dict[str, Any]) -> None:
    choices = plans.account_choices(session(), current_access())
    form.plan.choices = choices["plans"]
    form.package.choices = [SelectChoice("", NO_PACKAGE), *choices["packages"]]
    if not form.is_submitted():
        form.plan.data = data["plan"]
        form.package.data = data["package"] or ""


@bp.route("/usage/billing/<string:tenant>/<any(topup, bill, settings):action>", methods=["POST"])
@login_required
def account_action(tenant: str, action: str) -> Response | tuple[str, int]:
    """A platform admin's top-up, bill or change of plan on one account (all audited)."""
    access = current_access()
    data = billing.view(session(), access, tenant)  # 404 for an account one may not see
    access.require_platform_admin()
    form = _FORMS[action]()
    if isinstance(form, SettingsForm):
        _settings_choices(form, data)
    if not form.validate_on_submit():
        return _account_page(tenant, {action: form}, 400 if "csrf_token" in form.errors else 422)
    try:
        if isinstance(form, TopUpForm):
            amount = Decimal(form.amount.data or "0")
            billing.top_up(session(), access, tenant, amount, form.note.data or "")
            done = gettext("Topped up %(amount)s.", amount=money(amount))
        elif isinstance(form, BillForm):
            billing.post_bill(session(), access, tenant, form.month.data or "")
            done = gettext("The bill for %(month)s is posted.", month=form.month.data)
        else:
            plans.change_account(
                session(),
                access,
                tenant,
                {"plan": form.plan.data, "package": form.package.data or None},
            )
            done = gettext("The plan and package are saved.")
    except DomainError as exc:
        session().rollback()
        show_error(form, exc)
        return _account_page(tenant, {action: form}, exc.status)
    flash(done, "info")
    return redirect(url_for(".bills", tenant=tenant))
