"""Pages: labelling tasks with progress, the annotation canvas, and review."""

from __future__ import annotations

from flask import Blueprint, render_template, request, url_for
from flask_login import login_required

from portal.authz import Perm
from portal.labelling import service
from portal.labelling.models import ItemStatus
from portal.web import current_access, session

bp = Blueprint("labelling_pages", __name__)


@bp.route("/labelling")
@login_required
def index() -> str:
    access = current_access()
    tasks = list(session().scalars(service.tasks_query(access)))
    rows = [(t, service.progress(session(), t)) for t in tasks]
    return render_template("labelling/index.html", rows=rows)


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
    )
