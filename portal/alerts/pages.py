"""The alerts page: the rules of the caller's scopes with their state (ok, pending, firing),
their channels (credentials masked) and the recent deliveries; a rule or a channel is added
or replaced as YAML (the file's form), and deleted with a button."""

from __future__ import annotations

from typing import Any

import yaml
from flask import Blueprint, flash, redirect, render_template, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import HiddenField, TextAreaField
from wtforms.validators import DataRequired, Length

from portal.alerts import service
from portal.alerts.schemas import ChannelIn, RuleIn
from portal.errors import DomainError, Forbidden, ValidationFailed
from portal.i18n import gettext, lazy_gettext, translate_messages
from portal.web import current_access, session

bp = Blueprint("alerts_pages", __name__)

RULE_EXAMPLE = """name: nlp-budget
query: {kind: usage, measure: card_hours_share, budget: 500}
comparator: ">="
threshold: 0.9
for: 30m
scope: {level: project, name: nlp}
severity: normal
channels: [nlp-robot]
"""
CHANNEL_EXAMPLE = """name: nlp-robot
type: wecom
url: https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…
scope: {level: project, name: nlp}
"""


class DocumentForm(FlaskForm):
    document = TextAreaField(
        lazy_gettext("Document (YAML)"), validators=[DataRequired(), Length(max=20000)]
    )
    what = HiddenField(validators=[Length(max=16)])


class DeleteForm(FlaskForm):
    name = HiddenField(validators=[DataRequired(), Length(max=64)])
    what = HiddenField(validators=[Length(max=16)])


def _page(form: DocumentForm | None = None, errors: Any = None, status: int = 200) -> Any:
    access = current_access()
    s = session()
    if not service.manages_alerts(s, access):
        raise Forbidden(
            gettext("You may manage alerts only for the domains and projects you administer.")
        )
    rules = service.rules(s, access)
    return render_template(
        "alerts/index.html",
        rules=rules,
        channels=service.channels(s, access),
        deliveries=service.deliveries(s, access, 50),
        form=form or DocumentForm(),
        delete_form=DeleteForm(),
        errors=errors or {},
        rule_example=RULE_EXAMPLE,
        channel_example=CHANNEL_EXAMPLE,
    ), status


@bp.route("/alerts")
@login_required
def index() -> Any:
    return _page()


@bp.route("/alerts", methods=["POST"])
@login_required
def save() -> Any:
    form = DocumentForm()
    if not form.validate_on_submit():
        return _page(form, status=400 if "csrf_token" in form.errors else 422)
    try:
        doc = yaml.safe_load(form.document.data or "")
    except yaml.YAMLError as exc:
        return _page(form, {"document": [str(exc)]}, 422)
    if not isinstance(doc, dict):
        return _page(form, {"document": [gettext("Give a mapping of fields.")]}, 422)
    access, s = current_access(), session()
    schema = ChannelIn() if form.what.data == "channel" else RuleIn()
    errors = schema.validate(doc)
    if errors:
        return _page(form, translate_messages(service.flat_errors(errors)), 422)
    try:
        if form.what.data == "channel":
            service.create_channel(s, access, schema.load(doc))
            flash(gettext("The channel %(name)s is saved.", name=doc["name"]), "info")
        else:
            exists = doc["name"] in {r["name"] for r in service.rules(s, access)}
            service.save_rule(s, access, schema.load(doc), doc["name"] if exists else None)
            flash(gettext("The alert rule %(name)s is saved.", name=doc["name"]), "info")
    except ValidationFailed as exc:
        s.rollback()
        return _page(form, exc.errors, exc.status)
    except DomainError as exc:
        s.rollback()
        flash(exc.message, "error")
        return _page(form, status=exc.status)
    return redirect(url_for(".index"))


@bp.route("/alerts/delete", methods=["POST"])
@login_required
def remove() -> Response | Any:
    form = DeleteForm()
    if not form.validate_on_submit():
        return _page(status=400)
    access, s = current_access(), session()
    name = form.name.data or ""
    try:
        if form.what.data == "channel":
            service.delete_channel(s, access, name)
            flash(gettext("The channel %(name)s is deleted.", name=name), "info")
        else:
            service.delete_rule(s, access, name)
            flash(gettext("The alert rule %(name)s is deleted.", name=name), "info")
    except DomainError as exc:
        s.rollback()
        flash(exc.message, "error")
        return _page(status=exc.status)
    return redirect(url_for(".index"))
