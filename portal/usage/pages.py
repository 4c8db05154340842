"""Pages: usage of the caller's tenants, with downloads."""

from __future__ import annotations

from flask import Blueprint, render_template, request
from flask_login import login_required

from portal.errors import ValidationFailed
from portal.slurm import slurm
from portal.usage import billing, service
from portal.usage.schemas import DIMS, UsageQuerySchema, args_of
from portal.web import current_access, session

bp = Blueprint("usage_pages", __name__)


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


@bp.route("/usage/billing/<string:tenant>")
@login_required
def bills(tenant: str) -> str:
    data = billing.view(session(), current_access(), tenant)
    return render_template("usage/billing.html", b=data)
