"""Pages: usage of the caller's tenants, with downloads; billing, and for platform admins the
price plan editor and the form that opens billing accounts."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import HiddenField, SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length, Regexp

from portal.errors import Conflict, DomainError, Stale, ValidationFailed
from portal.pages import show_error
from portal.slurm import slurm
from portal.usage import billing, plans, service
from portal.usage.schemas import DIMS, UsageQuerySchema, args_of
from portal.web import check_version, current_access, session, version_of

bp = Blueprint("usage_pages", __name__)


class PlanForm(FlaskForm):
    document = TextAreaField("Plan (YAML or JSON)", validators=[DataRequired(), Length(max=65536)])
    # the plan the editor was opened on ("" for the starter) and that plan's version then
    opened = HiddenField(validators=[Length(max=200)])
    version = HiddenField(validators=[Length(max=64)])


class AccountForm(FlaskForm):
    tenant = SelectField("Domain or project")
    plan = SelectField("Plan")
    package = SelectField("Package")


class TopUpForm(FlaskForm):
    amount = StringField(
        "Amount",
        validators=[
            DataRequired(),
            Regexp(r"^\d{1,12}(\.\d{1,2})?$", message="a positive amount, at most 2 decimals"),
        ],
    )
    note = StringField("Note", validators=[Length(max=200)])


class BillForm(FlaskForm):
    month = StringField(
        "Month",
        validators=[
            DataRequired(),
            Regexp(r"^\d{4}-(0[1-9]|1[0-2])$", message="month must be YYYY-MM"),
        ],
    )


class SettingsForm(FlaskForm):
    plan = SelectField("Plan")
    package = SelectField("Package")


#: the operator forms of one account's page, by the name the page and the routes use
_FORMS: dict[str, type[FlaskForm]] = {
    "topup": TopUpForm,
    "bill": BillForm,
    "settings": SettingsForm,
}


@bp.route("/usage")
@login_required
def index() -> str:
    errors = UsageQuerySchema().validate(request.args)
    if errors:
        raise ValidationFailed(errors)
    args = args_of(UsageQuerySchema().load(request.args))
    rep = service.report(session(), current_access(), args, slurm())
    return render_template(
        "usage/index.html",
        rep=rep,
        dims=DIMS,
        month=rep.start.strftime("%Y-%m"),
        by=rep.by.value,
        accounts=billing.accounts(session(), current_access()),
        imports=service.import_status(session()),
        import_form=FlaskForm() if current_access().platform_admin else None,
    )


@bp.route("/usage/import", methods=["POST"])
@login_required
def import_now() -> Response:
    """Platform admins: import from sacct now instead of at the next scheduled import."""
    try:
        result = service.import_now(session(), current_access(), slurm())
        flash(f"Imported {result.seen} jobs from sacct ({result.written} new or changed).", "info")
    except DomainError as exc:
        if exc.status == 403:
            raise
        session().rollback()
        flash(exc.message, "error")
    return redirect(url_for(".index"))


def _account_form() -> AccountForm:
    choices = plans.account_choices(session(), current_access())
    form = AccountForm()
    form.tenant.choices = choices["tenants"]
    form.plan.choices = choices["plans"]
    form.package.choices = [("", "none: pay as you go"), *((p, p) for p in choices["packages"])]
    return form


def _overview(form: AccountForm | None, status: int = 200) -> tuple[str, int]:
    access = current_access()
    admin = access.platform_admin
    page = render_template(
        "usage/billing_index.html",
        accounts=plans.account_rows(session(), access),
        plans=plans.plan_list(session(), access) if admin else [],
        form=(form or _account_form()) if admin else None,
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
    flash(f"Billing account {tenant} opened.", "info")
    return redirect(url_for(".bills", tenant=tenant))


@bp.route("/usage/billing/plans", methods=["GET", "POST"])
@login_required
def plan_editor() -> Response | tuple[str, int]:
    """The price plan editor: ``?name=`` starts from that plan, without it from a starter."""
    access = current_access()
    access.require_platform_admin()
    form = PlanForm()
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "GET":
        opened = request.args.get("name") or ""
        form.document.data = plans.editor_text(session(), access, opened)
        form.opened.data = opened
        form.version.data = version_of(plans.plan_etag_data(session(), opened) if opened else None)
    elif form.validate_on_submit():
        try:
            name = plans.apply_text(
                session(), access, form.document.data or "", partial(_unchanged_since, form)
            )
        except ValidationFailed as exc:
            session().rollback()
            errors, status = exc.errors, exc.status
        except (Conflict, Stale) as exc:
            session().rollback()
            flash(exc.message, "error")
            status = exc.status
        else:
            flash(f"Price plan {name} applied.", "info")
            return redirect(url_for(".overview", _anchor=f"plan-{name}"))
    else:
        status = 400 if "csrf_token" in form.errors else 422
    return render_template("usage/plan.html", form=form, errors=errors), status


def _unchanged_since(form: PlanForm, name: str) -> None:
    """Saving ``name`` from the editor: the plan it was opened on must be as it was then, and
    a document renamed to another plan may not replace one the editor never showed."""
    if not form.version.data:  # a post that never came from the editor
        return
    current = plans.plan_etag_data(session(), name, lock=True)
    if name == form.opened.data:
        check_version(
            form.version.data,
            current,
            message=f"Someone else changed price plan {name} since you opened it, so your "
            "change was not saved. Open the plan again and make your change there.",
        )
    elif current is not None:
        raise Conflict(
            f"A price plan named {name} already exists; open it from the list to change it, "
            "so that no one else's change is overwritten."
        )


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
    return render_template("usage/billing.html", b=data, forms=forms), status


def _settings_choices(form: SettingsForm, data: dict[str, Any]) -> None:
    choices = plans.account_choices(session(), current_access())
    form.plan.choices = choices["plans"]
    form.package.choices = [("", "none: pay as you go"), *((p, p) for p in choices["packages"])]
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
            done = f"Topped up {amount} {data['currency']}."
        elif isinstance(form, BillForm):
            billing.post_bill(session(), access, tenant, form.month.data or "")
            done = f"Bill for {form.month.data} posted."
        else:
            plans.change_account(
                session(),
                access,
                tenant,
                {"plan": form.plan.data, "package": form.package.data or None},
            )
            done = "Plan and package saved."
    except DomainError as exc:
        session().rollback()
        show_error(form, exc)
        return _account_page(tenant, {action: form}, exc.status)
    flash(done, "info")
    return redirect(url_for(".bills", tenant=tenant))
