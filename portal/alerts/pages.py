"""The alerts page: the rules of the caller's scopes with their state (ok, pending, firing)
and their conditions in words, their channels (credentials masked) and the recent
deliveries. A usage rule is built with a form (what to watch, the scope, the threshold, how
long, the channels); any rule or channel can also be written as YAML (the file's form, for
experts and Prometheus rules). Deleting asks first."""

from __future__ import annotations

from typing import Any

import yaml
from flask import Blueprint, flash, redirect, render_template, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import (
    DecimalField,
    HiddenField,
    IntegerField,
    SelectField,
    SelectMultipleField,
    StringField,
    TextAreaField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange, Optional

from portal.alerts import service, words
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


class RuleForm(FlaskForm):
    """A usage rule, field by field; what a field means depends on ``measure``."""

    name = StringField(lazy_gettext("Name"), validators=[DataRequired(), Length(max=64)])
    measure = SelectField(lazy_gettext("Watch"), choices=[])
    budget = DecimalField(
        lazy_gettext("Budget (card-hours a month)"),
        validators=[Optional(), NumberRange(min=0.01, max=10_000_000)],
    )
    cards = SelectField(lazy_gettext("Cards"), choices=[SelectChoice("GPU"), SelectChoice("NPU")])
    comparator = SelectField(lazy_gettext("When the value is"), choices=[])
    threshold = DecimalField(
        lazy_gettext("Threshold (a percentage for a budget's share)"),
        validators=[InputRequired(), NumberRange(min=0, max=1_000_000_000)],
    )
    minutes = IntegerField(
        lazy_gettext("For at least (minutes; 0: at once)"),
        default=0,
        validators=[Optional(), NumberRange(min=0, max=7 * 24 * 60)],
    )
    level = SelectField(lazy_gettext("For"), choices=[])
    scope_name = StringField(
        lazy_gettext("Which one (empty: each one of them)"),
        validators=[Optional(), Length(max=64)],
    )
    severity = SelectField(lazy_gettext("Severity"), choices=[])
    channels = SelectMultipleField(lazy_gettext("Channels"), choices=[])

    def offer(self, channels: list[str]) -> None:
        """The choices in the reader's language; the channels the reader may use."""
        self.measure.choices = [SelectChoice(k, gettext(v)) for k, v in words.MEASURES.items()]
        self.comparator.choices = [
            SelectChoice(k, v) for k, v in words.SIGNS.items() if k in (">=", ">", "<=", "<")
        ]
        self.level.choices = [SelectChoice(k, gettext(v)) for k, v in words.LEVELS.items()]
        self.severity.choices = [SelectChoice(k, gettext(v)) for k, v in words.SEVERITIES.items()]
        self.channels.choices = [SelectChoice(c) for c in channels]

    def document(self) -> dict[str, Any]:
        """The rule as the YAML file and the API write it."""
        measure = self.measure.data
        query: dict[str, Any] = {"kind": "usage", "measure": measure}
        threshold = float(self.threshold.data or 0)
        if measure == "card_hours_share":
            if self.budget.data is not None:
                query["budget"] = float(self.budget.data)
            threshold /= 100
        if measure == "pool_free_cards":
            query["cards"] = self.cards.data
        return {
            "name": self.name.data,
            "query": query,
            "comparator": self.comparator.data,
            "threshold": threshold,
            "for": f"{self.minutes.data or 0}m",
            "scope": {"level": self.level.data, "name": self.scope_name.data or ""},
            "severity": self.severity.data,
            "channels": list(self.channels.data or []),
        }


#: where the rule document's errors show on the builder
FIELD_OF = {
    "name": "name",
    "query.measure": "measure",
    "query.budget": "budget",
    "query.cards": "cards",
    "query": "budget",
    "comparator": "comparator",
    "threshold": "threshold",
    "for": "minutes",
    "scope.level": "level",
    "scope.name": "scope_name",
    "scope": "scope_name",
    "severity": "severity",
    "channels": "channels",
}


class DeleteForm(FlaskForm):
    name = HiddenField(validators=[DataRequired(), Length(max=64)])
    what = HiddenField(validators=[Length(max=16)])


def _page(
    form: DocumentForm | None = None,
    errors: Any = None,
    status: int = 200,
    builder: RuleForm | None = None,
) -> Any:
    access = current_access()
    s = session()
    if not service.manages_alerts(s, access):
        raise Forbidden(
            gettext("You may manage alerts only for the domains and projects you administer.")
        )
    rules = service.rules(s, access)
    channels = service.channels(s, access)
    if builder is None:
        builder = RuleForm(formdata=None)
        builder.measure.data, builder.comparator.data = "card_hours_share", ">="
        builder.level.data, builder.severity.data = "project", "normal"
    builder.offer([c["name"] for c in channels])
    return render_template(
        "alerts/index.html",
        rules=rules,
        channels=channels,
        deliveries=service.deliveries(s, access, 50),
        form=form or DocumentForm(),
        builder=builder,
        delete_form=DeleteForm(),
        errors=errors or {},
        rule_example=RULE_EXAMPLE,
        channel_example=CHANNEL_EXAMPLE,
        condition=words.condition,
        scope=words.scope,
        value=words.value,
        yaml_open=form is not None,
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


@bp.route("/alerts/rules", methods=["POST"])
@login_required
def build() -> Any:
    """A usage rule from the builder's fields: the same validation and save as the YAML."""
    access, s = current_access(), session()
    builder = RuleForm()
    builder.offer([c["name"] for c in service.channels(s, access)])
    if not builder.validate_on_submit():
        return _page(status=400 if "csrf_token" in builder.errors else 422, builder=builder)
    doc = builder.document()
    errors = RuleIn().validate(doc)
    if errors:
        _on_fields(builder, translate_messages(service.flat_errors(errors)))
        return _page(status=422, builder=builder)
    exists = doc["name"] in {r["name"] for r in service.rules(s, access)}
    try:
        service.save_rule(s, access, RuleIn().load(doc), doc["name"] if exists else None)
    except ValidationFailed as exc:
        s.rollback()
        _on_fields(builder, exc.errors)
        return _page(status=exc.status, builder=builder)
    except DomainError as exc:
        s.rollback()
        flash(exc.message, "error")
        return _page(status=exc.status, builder=builder)
    flash(gettext("The alert rule %(name)s is saved.", name=doc["name"]), "info")
    return redirect(url_for(".index"))


def _on_fields(form: RuleForm, errors: Any) -> None:
    """The document's errors on the builder's fields (the name's field for the rest)."""
    for path, messages in dict(errors).items():
        field = getattr(form, FIELD_OF.get(path, "name"))
        field.errors = [*field.errors, *(str(m) for m in messages)]


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
