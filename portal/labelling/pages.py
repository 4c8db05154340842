"""Pages: labelling tasks with progress, the annotation canvas, and review."""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.wrappers import Response
from wtforms import SelectField, StringField
from wtforms.validators import DataRequired, Length

from portal.authz import Perm
from portal.datasets import service as datasets
from portal.datasets.models import Dataset, DatasetVersion
from portal.datasets.service import Settings
from portal.errors import DomainError
from portal.i18n import gettext, ngettext
from portal.i18n import lazy_gettext as _l
from portal.labelling import service, words
from portal.labelling.models import ItemStatus, Kind
from portal.pages import show_error
from portal.tenancy.models import Project
from portal.web import current_access, session

bp = Blueprint("labelling_pages", __name__)
COMMAS = re.compile("[,，、]")  # what a Chinese keyboard types between labels, too


@bp.context_processor
def _words() -> dict[str, Any]:
    return {"words": words}


class LabelSetForm(FlaskForm):
    project_id = SelectField(_l("Project"), coerce=int)
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=64)])
    labels = StringField(
        _l("Labels (separated by commas)"), validators=[DataRequired(), Length(max=2000)]
    )


class TaskForm(FlaskForm):
    project_id = SelectField(_l("Project"), coerce=int)
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=64)])
    dataset_version_id = SelectField(_l("Images"), coerce=int)
    label_set_id = SelectField(_l("Label set"), coerce=int)


@bp.route("/labelling", methods=["GET", "POST"])
@login_required
def index() -> str | Response | tuple[str, int]:
    """The tasks with their progress; for managers, new label sets and tasks."""
    access = current_access()
    managed = [
        (p.id, p.name)
        for p in session().scalars(select(Project).where(access.project_filter()))
        if Perm.PROJECT_MANAGE in access.on_project(p)
    ]
    sets_form, task_form = LabelSetForm(prefix="set"), TaskForm(prefix="task")
    sets_form.project_id.choices = task_form.project_id.choices = managed
    task_form.label_set_id.choices = [
        (ls.id, f"{ls.name}: {', '.join(ls.labels)}")
        for ls in session().scalars(service.label_sets_query(access))
    ]
    task_form.dataset_version_id.choices = [
        (
            v.id,
            ngettext(
                "%(dataset)s v%(version)d (%(num)d file)",
                "%(dataset)s v%(version)d (%(num)d files)",
                v.file_count,
                dataset=v.dataset.name,
                version=v.version,
            ),
        )
        for v in session().scalars(
            select(DatasetVersion)
            .join(Dataset, Dataset.id == DatasetVersion.dataset_id)
            .where(datasets.visible(access))
            .order_by(Dataset.name, DatasetVersion.version.desc())
        )
    ]
    # a form sent but not valid (a field's error, a choice not one's own): the page, 422
    status = 422 if request.method == "POST" else 200
    try:
        if request.form.get("set-name") is not None and sets_form.validate_on_submit():
            labels = [x.strip() for x in COMMAS.split(sets_form.labels.data or "") if x.strip()]
            data = {"project_id": sets_form.project_id.data, "name": sets_form.name.data}
            service.create_label_set(session(), access, {**data, "labels": labels})
            return redirect(url_for(".index"))
        if request.form.get("task-name") is not None and task_form.validate_on_submit():
            made = service.create_task(session(), access, Settings.current(), task_form.data)
            return redirect(url_for(".task", task_id=made.id))
    except DomainError as exc:
        session().rollback()
        show_error(task_form if request.form.get("task-name") is not None else sets_form, exc)
        status = exc.status
    tasks = list(session().scalars(service.tasks_query(access)))
    rows = [(t, service.progress(session(), t)) for t in tasks]
    page = render_template(
        "labelling/index.html", rows=rows, sets_form=sets_form, task_form=task_form,
        may_manage=bool(managed),
    )  # fmt: skip
    return page, status


@bp.route("/labelling/tasks/<id:task_id>")
@login_required
def task(task_id: int) -> str:
    access = current_access()
    t = service.get_task(session(), access, task_id)
    status = request.args.get("status") or None
    if status not in {s.value for s in ItemStatus}:
        status = None
    items = list(session().scalars(service.items_query(t.id, status).limit(500)))
    project_perms = access.on_project(service.project_of(session(), t.project_id))
    return render_template(
        "labelling/task.html",
        task=t,
        items=items,
        status=status,
        progress=service.progress(session(), t),
        may_review=Perm.PROJECT_MANAGE in project_perms,
        statuses=[s.value for s in ItemStatus],
        formats={f.value: name for f, name in words.FORMATS.items()},
    )


@bp.route("/labelling/tasks/<id:task_id>/items/<id:item_id>")
@login_required
def annotate(task_id: int, item_id: int) -> str:
    access = current_access()
    t, item = service.get_item(session(), access, task_id, item_id)
    project_perms = access.on_project(service.project_of(session(), t.project_id))
    return render_template(
        "labelling/annotate.html",
        task=t,
        item=item,
        api=url_for("labelling.ItemById", task_id=t.id, item_id=item.id),
        may_annotate=Perm.JOBS_SUBMIT in project_perms,
        may_review=Perm.PROJECT_MANAGE in project_perms,
        texts=canvas_texts(),
    )


def canvas_texts() -> dict[str, Any]:
    """Everything the canvas script (static/labelling.js) shows, in the reader's language:
    it reads this from the page and has no text of its own. ``%(num)d`` is filled in by it."""
    return {
        "saved_one": gettext("Saved %(num)d annotation."),
        "saved_many": gettext("Saved %(num)d annotations."),
        "delete": gettext("Delete this shape"),
        "reject_why": gettext("Why is it rejected?"),
        "reviewed": {
            ItemStatus.ACCEPTED.value: gettext("Item accepted."),
            ItemStatus.REJECTED.value: gettext("Item rejected."),
        },
        "failed": gettext("The portal did not answer. Try again."),
        "shapes": {k.value: words.shape(k.value) for k in Kind},
        "statuses": {s.value: words.status(s.value) for s in ItemStatus},
    }
