"""API: usage reports of the caller's tenants, as JSON or as CSV / XLSX / PDF files."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from flask import Response

from accounting.models import UsageRecord
from accounting.plan_schema import PlanSchema
from accounting.report import Dim
from accounting.timeline import Step, jobs, series
from portal.slurm import slurm
from portal.usage import billing, plans, service
from portal.usage.exports import download, zone
from portal.usage.schemas import (
    BillingAccountSchema,
    BillingSchema,
    ChangeAccountSchema,
    ExportQuerySchema,
    JobsQuerySchema,
    JobUseSchema,
    OpenAccountSchema,
    PostBillSchema,
    PricePlanSchema,
    SeriesQuerySchema,
    SeriesSchema,
    TopUpSchema,
    UsageQuerySchema,
    UsageReportSchema,
    args_of,
    report_data,
)
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("usage", __name__, url_prefix="/api/v1/usage", description="Usage")


@blp.route("")
class Usage(AuthedView):
    @blp.arguments(UsageQuerySchema, location="query")
    @blp.response(200, UsageReportSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """Card-hours, CPU-hours, waits by domain, project, user, GPU type or pool.

        The period is ``month``, or ``from`` and ``to`` (both, ``from`` before ``to``); none:
        the current month. Any other combination is 422. ``domain``, ``project`` and ``user``
        narrow it; what the caller may not read is never in it."""
        rep = service.report(session(), current_access(), args_of(args), slurm())
        return report_data(rep)


@blp.route("/export")
class Export(AuthedView):
    @blp.arguments(ExportQuerySchema, location="query")
    @blp.response(200, description="the report as a CSV, XLSX or PDF file")
    def get(self, args: dict[str, Any]) -> Response:
        """The same report as a file in the reader's language, headed by the site's name
        (the period as for ``GET /usage``: ``month``, or ``from`` and ``to``; any other
        combination is 422). CSV is UTF-8 with a byte order mark, for Excel."""
        fmt = args.pop("format")
        rep = service.report(session(), current_access(), args_of(args), slurm())
        return download(rep, fmt)


@blp.route("/series")
class UsageSeries(AuthedView):
    @blp.arguments(SeriesQuerySchema, location="query")
    @blp.response(200, SeriesSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """GPU and NPU card-hours over time, per hour, day or month in the site's time zone,
        per group of ``by`` (left out: in all).

        The period and filters as for ``GET /usage``: ``month``, or ``from`` and ``to`` (both,
        whole hours, ``from`` before ``to``); any other combination is 422."""
        args = args_of(args)
        start, end = service.period(args)
        access = current_access()
        by = Dim(args["by"]) if args.get("by") else None
        step = Step(args["step"]) if args.get("step") else None
        found = series(
            session().connection(),
            start,
            end,
            by=by,
            step=step,
            zone=zone(),
            where=service.filters(args),
            scope=service.scope(session(), access),
        )
        return asdict(found)


@blp.route("/jobs")
class UsageJobs(AuthedView):
    @blp.arguments(JobsQuerySchema, location="query")
    @blp.response(200, JobUseSchema(many=True))
    def get(self, args: dict[str, Any]) -> list[Any]:
        """The metered jobs that ran in the period (newest first, at most ``limit``), with
        what each held over its whole run; only jobs the caller may read.

        The period as for ``GET /usage``: ``month``, or ``from`` and ``to`` (both, whole hours,
        ``from`` before ``to``); any other combination is 422."""
        args = args_of(args)
        start, end = service.period(args)
        access = current_access()
        return jobs(
            session().connection(),
            start,
            end,
            where=service.filters(args),
            scope=service.scope(session(), access, UsageRecord),
            limit=args["limit"],
        )


@blp.route("/billing")
class Accounts(AuthedView):
    @blp.response(200, BillingAccountSchema(many=True))
    def get(self) -> list[Any]:
        """The billing accounts the caller may see, with their balances."""
        return billing.accounts(session(), current_access())


@blp.route("/billing/<string:tenant>")
class Billing(AuthedView):
    @blp.response(200, BillingSchema)
    def get(self, tenant: str) -> dict[str, Any]:
        """Balance, bills with their lines, and income/expense history of a tenant."""
        return billing.view(session(), current_access(), tenant)

    @blp.arguments(ChangeAccountSchema)
    @blp.response(200, BillingSchema)
    def patch(self, args: dict[str, Any], tenant: str) -> dict[str, Any]:
        """Move the account to another plan and/or package (platform admins; audited)."""
        return plans.change_account(session(), current_access(), tenant, args)


@blp.route("/billing/plans")
class PricePlans(AuthedView):
    @blp.response(200, PricePlanSchema(many=True))
    def get(self) -> list[dict[str, Any]]:
        """Every price plan with its rates, packages and accounts (platform admins)."""
        return plans.plan_list(session(), current_access())


@blp.route("/billing/plans/<string:name>")
class PricePlan(AuthedView):
    @blp.etag
    @blp.response(200, PricePlanSchema)
    def get(self, name: str) -> dict[str, Any]:
        """A price plan as its document (platform admins); its ETag is the document's."""
        found = plans.plan(session(), current_access(), name)
        blp.set_etag(plans.plan_etag_data(session(), name))
        return found

    @blp.etag
    @blp.arguments(PlanSchema)
    @blp.response(200, PricePlanSchema)
    def put(self, spec: Any, name: str) -> dict[str, Any]:
        """Create or replace a price plan: its prices replaced, its packages matched by name
        (one in use cannot be removed). Money as decimal strings. Platform admins; audited.
        With ``If-Match``, a plan changed since that ETag (or not there) is 412.

        422 for what the schema cannot state: one rate per resource and model, cpu and mem
        rates without a model, package names unique."""
        current_access().require_platform_admin()
        blp.check_etag(plans.plan_etag_data(session(), name, lock=True))
        saved = plans.put_plan(session(), current_access(), name, spec)
        blp.set_etag(plans.plan_etag_data(session(), name))
        return saved


@blp.route("/billing/accounts")
class OpenAccount(AuthedView):
    @blp.arguments(OpenAccountSchema)
    @blp.response(201, BillingSchema)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Open the billing account of a domain or project (platform admins; audited)."""
        return plans.open_account(
            session(), current_access(), args["tenant"], args["plan"], args["package"]
        )


@blp.route("/billing/<string:tenant>/topups")
class TopUps(AuthedView):
    @blp.arguments(TopUpSchema)
    @blp.response(200, BillingSchema)
    def post(self, args: dict[str, Any], tenant: str) -> dict[str, Any]:
        """Credit the balance (platform admins: a virtual top-up)."""
        return billing.top_up(session(), current_access(), tenant, args["amount"], args["note"])


@blp.route("/billing/<string:tenant>/bills")
class Bills(AuthedView):
    @blp.arguments(PostBillSchema)
    @blp.response(200, BillingSchema)
    def post(self, args: dict[str, Any], tenant: str) -> dict[str, Any]:
        """Bill a finished month and debit the balance (platform admins; once per month)."""
        return billing.post_bill(session(), current_access(), tenant, args["month"])
