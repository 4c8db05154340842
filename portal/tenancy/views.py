"""API: domains, their admins, projects and project members."""

from __future__ import annotations

from typing import Any

from portal.authz import Perm
from portal.pagination import PageParams, page_of_query
from portal.quotas import service as quotas
from portal.slurm import slurm
from portal.tenancy import members, service
from portal.tenancy.models import Domain, DomainAdmin, Membership, Project
from portal.tenancy.schemas import (
    AdminSchema,
    DomainSchema,
    DomainUpdateSchema,
    MemberSchema,
    MemberUpdateSchema,
    ProjectQuerySchema,
    ProjectSchema,
    ProjectUpdateSchema,
)
from portal.web import AuthedView, Blueprint, current_access, locked, session

domains = Blueprint("domains", __name__, url_prefix="/api/v1/domains", description="Domains")
projects = Blueprint("projects", __name__, url_prefix="/api/v1/projects", description="Projects")


@domains.route("")
class Domains(AuthedView):
    @domains.response(200, DomainSchema(many=True))
    @domains.paginate()
    def get(self, pagination_parameters: PageParams) -> list[Domain]:
        return page_of_query(
            session(), service.domains_query(current_access()), pagination_parameters
        )

    @domains.arguments(DomainSchema)
    @domains.response(201, DomainSchema)
    def post(self, args: dict[str, Any]) -> Domain:
        return service.create_domain(session(), current_access(), args)


@domains.route("/<id:domain_id>")
class DomainById(AuthedView):
    @domains.response(200, DomainSchema)
    def get(self, domain_id: int) -> Domain:
        return service.get_domain(session(), current_access(), domain_id, Perm.DOMAIN_READ)

    @domains.arguments(DomainUpdateSchema)
    @domains.response(200, DomainSchema)
    def patch(self, args: dict[str, Any], domain_id: int) -> Domain:
        return service.update_domain(session(), current_access(), domain_id, args)

    @domains.response(204)
    def delete(self, domain_id: int) -> None:
        service.delete_domain(session(), current_access(), domain_id)


@domains.route("/<id:domain_id>/admins")
class DomainAdmins(AuthedView):
    @domains.response(200, AdminSchema(many=True))
    @domains.paginate()
    def get(self, domain_id: int, pagination_parameters: PageParams) -> list[DomainAdmin]:
        stmt = members.admins_query(session(), current_access(), domain_id)
        return page_of_query(session(), stmt, pagination_parameters)

    @domains.arguments(AdminSchema)
    @domains.response(201, AdminSchema)
    def post(self, args: dict[str, Any], domain_id: int) -> DomainAdmin:
        return members.add_admin(session(), current_access(), domain_id, args["username"])


@domains.route("/<id:domain_id>/admins/<id:user_id>")
class DomainAdminById(AuthedView):
    @domains.response(204)
    def delete(self, domain_id: int, user_id: int) -> None:
        members.remove_admin(session(), current_access(), domain_id, user_id)


@projects.route("")
class Projects(AuthedView):
    @projects.arguments(ProjectQuerySchema, location="query")
    @projects.response(200, ProjectSchema(many=True))
    @projects.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[Project]:
        stmt = service.projects_query(current_access(), args.get("domain_id"))
        return page_of_query(session(), stmt, pagination_parameters)

    @projects.arguments(ProjectSchema)
    @projects.response(201, ProjectSchema)
    def post(self, args: dict[str, Any]) -> Project:
        """Create a project in a domain (domain admin)."""
        return service.create_project(session(), current_access(), args)


@projects.route("/<id:project_id>")
class ProjectById(AuthedView):
    @projects.response(200, ProjectSchema)
    def get(self, project_id: int) -> Project:
        return service.get_project(session(), current_access(), project_id, Perm.PROJECT_READ)

    @projects.arguments(ProjectUpdateSchema)
    @projects.response(200, ProjectSchema)
    def patch(self, args: dict[str, Any], project_id: int) -> Project:
        return service.update_project(session(), current_access(), project_id, args)

    @projects.response(204)
    def delete(self, project_id: int) -> None:
        """Delete an empty project; its Slurm account goes with it."""
        project = service.get_project(session(), current_access(), project_id, Perm.PROJECT_READ)
        domain_id = project.domain_id
        service.delete_project(session(), current_access(), project_id)
        quotas.enforce_domain(session(), current_access(), slurm(), domain_id)


@projects.route("/<id:project_id>/members")
class Members(AuthedView):
    @projects.response(200, MemberSchema(many=True))
    @projects.paginate()
    def get(self, project_id: int, pagination_parameters: PageParams) -> list[Membership]:
        stmt = members.members_query(session(), current_access(), project_id)
        return page_of_query(session(), stmt, pagination_parameters)

    @projects.arguments(MemberSchema)
    @projects.response(201, MemberSchema)
    def post(self, args: dict[str, Any], project_id: int) -> Membership:
        added = members.add_member(
            session(), current_access(), project_id, args["username"], args["role_id"]
        )
        # the new member may submit at once: no platform admin's sync in between
        quotas.enforce_project(session(), current_access(), slurm(), project_id)
        return added


@projects.route("/<id:project_id>/members/<id:user_id>")
class MemberById(AuthedView):
    @projects.etag
    @projects.response(200, MemberSchema)
    def get(self, project_id: int, user_id: int) -> Membership:
        """One member and their role; the ETag is the membership's (its role)."""
        member = members.get_member(session(), current_access(), project_id, user_id)
        projects.set_etag(members.member_etag_data(member))
        return member

    @projects.etag
    @projects.arguments(MemberUpdateSchema)
    @projects.response(200, MemberSchema)
    def patch(self, args: dict[str, Any], project_id: int, user_id: int) -> Membership:
        """Give the member another role. With ``If-Match``, a membership changed since that
        ETag is 412 and nothing changes."""
        _check_member(project_id, user_id)
        updated = members.update_member(
            session(), current_access(), project_id, user_id, args["role_id"]
        )
        quotas.enforce_project(session(), current_access(), slurm(), project_id)
        projects.set_etag(members.member_etag_data(updated))
        return updated

    @projects.etag
    @projects.response(204)
    def delete(self, project_id: int, user_id: int) -> None:
        """Remove the member; ``If-Match`` as for PATCH. Their Slurm association with the
        project's account goes at once: Slurm refuses their jobs there from then on."""
        _check_member(project_id, user_id)
        members.remove_member(session(), current_access(), project_id, user_id)
        quotas.enforce_project(session(), current_access(), slurm(), project_id)


def _check_member(project_id: int, user_id: int) -> None:
    access = current_access()
    member = members.get_member(session(), access, project_id, user_id, Perm.MEMBERS_MANAGE)
    projects.check_etag(members.member_etag_data(locked(member)))
