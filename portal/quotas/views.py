"""API: domain and project quotas, and the Slurm account sync (platform admin)."""

from __future__ import annotations

from typing import Any

from portal.quotas import policy, service
from portal.quotas.schemas import (
    DryRunSchema,
    PolicySchema,
    QuotaSavedSchema,
    QuotaSchema,
    SyncSchema,
)
from portal.slurm import slurm
from portal.tenancy.models import Domain, Project
from portal.web import AuthedView, Blueprint, current_access, locked, session

blp = Blueprint("quotas", __name__, url_prefix="/api/v1", description="Quotas and Slurm sync")


@blp.route("/domains/<id:domain_id>/quota")
class DomainQuota(AuthedView):
    @blp.etag
    @blp.response(200, QuotaSchema)
    def get(self, domain_id: int) -> dict[str, int | None]:
        return service.get_domain_quota(session(), current_access(), domain_id).quota()

    @blp.etag
    @blp.arguments(QuotaSchema)
    @blp.arguments(DryRunSchema, location="query")
    @blp.response(200, QuotaSavedSchema)
    def put(self, args: dict[str, Any], query: dict[str, Any], domain_id: int) -> dict[str, Any]:
        """Set the domain's limits (platform admin); absent fields stay as they are. Slurm
        enforces them at once; ``?dry_run=true`` shows the commands and saves nothing.
        With ``If-Match``, limits changed since that ETag are 412 and nothing changes."""
        return _save(Domain, domain_id, args, query["dry_run"])


@blp.route("/projects/<id:project_id>/quota")
class ProjectQuota(AuthedView):
    @blp.etag
    @blp.response(200, QuotaSchema)
    def get(self, project_id: int) -> dict[str, int | None]:
        return service.get_project_quota(session(), current_access(), project_id).quota()

    @blp.etag
    @blp.arguments(QuotaSchema)
    @blp.arguments(DryRunSchema, location="query")
    @blp.response(200, QuotaSavedSchema)
    def put(self, args: dict[str, Any], query: dict[str, Any], project_id: int) -> dict[str, Any]:
        """Set the project's limits within its domain's (domain or project admin). Slurm
        enforces them at once; ``?dry_run=true`` shows the commands and saves nothing.
        With ``If-Match``, limits changed since that ETag are 412 and nothing changes."""
        return _save(Project, project_id, args, query["dry_run"])


def _save(
    owner: type[Domain] | type[Project], owner_id: int, args: dict[str, Any], dry_run: bool
) -> dict[str, Any]:
    current = service.editable(session(), current_access(), owner, owner_id)
    blp.check_etag(locked(current).quota(), QuotaSchema)
    saved, sent = service.save_and_enforce(
        session(), current_access(), slurm(), owner, owner_id, args, dry_run=dry_run
    )
    blp.set_etag(saved.quota(), QuotaSchema)  # the version now stored (a dry run changes none)
    quota = {**saved.quota(), **args} if dry_run else saved.quota()
    return {**quota, "slurm": sent}


@blp.route("/slurm/sync")
class SlurmSync(AuthedView):
    @blp.response(200, SyncSchema)
    def get(self) -> dict[str, Any]:
        """Preview: the sacctmgr commands that would bring Slurm to the portal's state."""
        return service.sync(session(), current_access(), slurm(), apply=False)

    @blp.response(200, SyncSchema)
    def post(self) -> dict[str, Any]:
        """Apply those commands through the Slurm client."""
        return service.sync(session(), current_access(), slurm(), apply=True)


@blp.route("/slurm/policy")
class AdmissionPolicy(AuthedView):
    @blp.response(200, PolicySchema)
    def get(self) -> dict[str, Any]:
        """Preview: the admission hook's policy table rendered from the portal's tenants."""
        return policy.render_policy(session(), current_access(), apply=False)

    @blp.response(200, PolicySchema)
    def post(self) -> dict[str, Any]:
        """Install job_submit.lua and the table where slurmctld reads them (no restart)."""
        return policy.render_policy(session(), current_access(), apply=True)
