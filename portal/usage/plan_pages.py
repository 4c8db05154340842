"""The price plan pages (platform admins): a form with a rate per GPU and NPU model, CPU and
memory rates, packages and the days the plan is in effect; and, for experts, the whole plan as
YAML or JSON. Both keep the version check: a plan changed by someone else since the page was
opened is not overwritten."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import HiddenField, TextAreaField
from wtforms.validators import DataRequired, Length

from portal.errors import Conflict, Stale, ValidationFailed
from portal.i18n import gettext, lazy_gettext
from portal.usage import plan_form, plans
from portal.usage.blueprint import bp
from portal.web import check_version, current_access, session, version_of


class DocumentForm(FlaskForm):
    document = TextAreaField(
        lazy_gettext("Plan (YAML or JSON)"), validators=[DataRequired(), Length(max=65536)]
    )
    opened = HiddenField(validators=[Length(max=200)])
    version = HiddenField(validators=[Length(max=64)])


def _opened(form: Any) -> None:
    """A GET: the plan ``?name=`` names (a new one without it) and its version now."""
    opened = request.args.get("name") or ""
    form.opened.data = opened
    form.version.data = version_of(plans.plan_etag_data(session(), opened) if opened else None)


def _save(
    form: Any, apply: Callable[[Callable[[str], None]], str]
) -> tuple[Response | None, dict[str, list[str]], int]:
    """Apply what a form holds; a redirect to the plan when it is saved, else its field
    errors (by the document's paths) and the status to answer with."""
    try:
        name = apply(partial(_unchanged_since, form))
    except ValidationFailed as exc:
        session().rollback()
        return None, exc.errors, exc.status
    except (Conflict, Stale) as exc:
        session().rollback()
        flash(exc.message, "error")
        return None, {}, exc.status
    flash(gettext("The price plan %(name)s is saved.", name=name), "info")
    return redirect(url_for(".overview", _anchor=f"plan-{name}")), {}, 200


@bp.route("/usage/billing/plans", methods=["GET", "POST"])
@login_required
def plan_editor() -> Response | tuple[str, int]:
    """The price plan form: ``?name=`` opens that plan, without it a new one."""
    access = current_access()
    access.require_platform_admin()
    status, rest = 200, []
    if request.method == "GET":
        name = request.args.get("name") or ""
        doc = plans.plan(session(), access, name) if name else None
        form = plan_form.PlanForm(formdata=None, data=plan_form.form_data(doc))
        _opened(form)
    else:
        form = plan_form.PlanForm()
        if form.validate_on_submit():
            made = plan_form.document(form)
            done, errors, status = _save(
                form, lambda check: plans.apply_document(session(), access, made.doc, check)
            )
            if done is not None:
                return done
            rest = plan_form.place_errors(made, errors)
        else:
            status = 400 if "csrf_token" in form.errors else 422
    page = render_template("usage/plan.html", form=plan_form.with_currency(form), errors=rest)
    return page, status


@bp.route("/usage/billing/plans/advanced", methods=["GET", "POST"])
@login_required
def plan_advanced() -> Response | tuple[str, int]:
    """The whole plan as YAML or JSON, for experts: ``?name=`` starts from that plan."""
    access = current_access()
    access.require_platform_admin()
    form = DocumentForm()
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "GET":
        form.document.data = plans.editor_text(session(), access, request.args.get("name") or "")
        _opened(form)
    elif form.validate_on_submit():
        text = form.document.data or ""
        done, errors, status = _save(
            form, lambda check: plans.apply_text(session(), access, text, check)
        )
        if done is not None:
            return done
    else:
        status = 400 if "csrf_token" in form.errors else 422
    return render_template("usage/plan_advanced.html", form=form, errors=errors), status


def _unchanged_since(form: Any, name: str) -> None:
    """Saving ``name`` from a page: the plan it was opened on must be as it was then, and a
    plan renamed to another's name may not replace one the page never showed."""
    if not form.version.data:  # a post that never came from the page
        return
    current = plans.plan_etag_data(session(), name, lock=True)
    if name == form.opened.data:
        check_version(
            form.version.data,
            current,
            message=gettext(
                "Someone else changed the price plan %(name)s since you opened it, so your "
                "change was not saved. Open the plan again and make your change there.",
                name=name,
            ),
        )
    elif current is not None:
        raise Conflict(
            gettext(
                "A price plan named %(name)s already exists; open it from the list to change "
                "it, so that no one else's change is overwritten.",
                name=name,
            )
        )
