"""Pages: usage of the caller's tenants, with downloads; billing, and for platform admins the
price plan editor and the form that opens billing accounts."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import SelectField, TextAreaField
from wtforms.validators import DataRequired, Length

from portal.errors import DomainError, ValidationFailed
from portal.pages import show_error
from portal.slurm import slurm
from portal.usage import billing, plans, service
from portal.usage.schemas import DIMS, UsageQuerySchema, args_of
from portal.web import current_access, session

bp = Blueprint("usage_pages", __name__)


class PlanForm(FlaskForm):
    document = TextAreaField("Plan (YAML or JSON)", validators=[DataRequired(), Length(max=65536)])


class AccountForm(FlaskForm):
    tenant = SelectField("Domain or project")
    plan = SelectField("Plan")
    package = SelectField("Package")


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
    )


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
        form.document.data = plans.editor_text(session(), access, request.args.get("name"))
    elif form.validate_on_submit():
        try:
            name = plans.apply_text(session(), access, form.document.data or "")
        except ValidationFailed as exc:
            session().rollback()
            errors, status = exc.errors, exc.status
        else:
            flash(f"Price plan {name} applied.", "info")
            return redirect(url_for(".overview", _anchor=f"plan-{name}"))
    else:
        status = 400 if "csrf_token" in form.errors else 422
    return render_template("usage/plan.html", form=form, errors=errors), status


@bp.route("/usage/billing/<string:tenant>")
@login_required
def bills(tenant: str) -> str:
    data = billing.view(session(), current_access(), tenant)
    return render_template("usage/billing.html", b=data)
