"""API: user groups of a domain and their roles on projects."""

from __future__ import annotations

from typing import Any

from portal.errors import NotFound
from portal.i18n import gettext
from portal.pagination import PageParams, page_of_list, page_of_query
from portal.tenancy import groups as service
from portal.tenancy.models import Group, GroupGrant, GroupMember
from portal.tenancy.schemas import (
    GrantSchema,
    GroupMemberSchema,
    GroupQuerySchema,
    GroupSchema,
    GroupUpdateSchema,
)
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("groups", __name__, url_prefix="/api/v1/groups", description="User groups")


@blp.route("")
class Groups(AuthedView):
    @blp.arguments(GroupQuerySchema, location="query")
    @blp.response(200, GroupSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[Group]:
        stmt = service.groups_query(current_access(), args.get("domain_id"))
        return page_of_query(session(), stmt, pagination_parameters)

    @blp.arguments(GroupSchema)
    @blp.response(201, GroupSchema)
    def post(self, args: dict[str, Any]) -> Group:
        return service.create_group(session(), current_access(), args)


@blp.route("/<id:group_id>")
class GroupById(AuthedView):
    @blp.response(200, GroupSchema)
    def get(self, group_id: int) -> Group:
        return service.get_group(session(), current_access(), group_id)

    @blp.arguments(GroupUpdateSchema)
    @blp.response(200, GroupSchema)
    def patch(self, args: dict[str, Any], group_id: int) -> Group:
        return service.update_group(session(), current_access(), group_id, args)

    @blp.response(204)
    def delete(self, group_id: int) -> None:
        service.delete_group(session(), current_access(), group_id)


@blp.route("/<id:group_id>/members")
class GroupMembers(AuthedView):
    @blp.response(200, GroupMemberSchema(many=True))
    @blp.paginate()
    def get(self, group_id: int, pagination_parameters: PageParams) -> list[GroupMember]:
        rows = service.group_members(session(), current_access(), group_id)
        return page_of_list(rows, pagination_parameters)

    @blp.arguments(GroupMemberSchema)
    @blp.response(201, GroupMemberSchema)
    def post(self, args: dict[str, Any], group_id: int) -> GroupMember:
        return service.add_group_member(session(), current_access(), group_id, args["username"])


@blp.route("/<id:group_id>/members/<id:user_id>")
class GroupMemberById(AuthedView):
    @blp.response(204)
    def delete(self, group_id: int, user_id: int) -> None:
        service.remove_group_member(session(), current_access(), group_id, user_id)


@blp.route("/<id:group_id>/grants")
class Grants(AuthedView):
    @blp.response(200, GrantSchema(many=True))
    @blp.paginate()
    def get(self, group_id: int, pagination_parameters: PageParams) -> list[GroupGrant]:
        rows = service.group_grants(session(), current_access(), group_id)
        return page_of_list(rows, pagination_parameters)

    @blp.etag
    @blp.arguments(GrantSchema)
    @blp.response(200, GrantSchema)
    def put(self, args: dict[str, Any], group_id: int) -> GroupGrant:
        """Give the group a role on a project of its domain (replaces an earlier one). With
        ``If-Match`` (the ETag of ``GET …/grants/{project_id}``), a grant changed since, or
        not there, is 412 and nothing changes."""
        _check_grant(group_id, args["project_id"])
        row = service.grant(
            session(), current_access(), group_id, args["project_id"], args["role_id"]
        )
        blp.set_etag(service.grant_etag_data(row))
        return row


@blp.route("/<id:group_id>/grants/<id:project_id>")
class GrantById(AuthedView):
    @blp.etag
    @blp.response(200, GrantSchema)
    def get(self, group_id: int, project_id: int) -> GroupGrant:
        """The group's role on one project; the ETag is the grant's."""
        row = service.find_grant(session(), current_access(), group_id, project_id)
        if row is None:
            raise NotFound(gettext("The group holds no role on this project."))
        blp.set_etag(service.grant_etag_data(row))
        return row

    @blp.etag
    @blp.response(204)
    def delete(self, group_id: int, project_id: int) -> None:
        """Take the role back; ``If-Match`` as for PUT."""
        _check_grant(group_id, project_id)
        service.revoke(session(), current_access(), group_id, project_id)


def _check_grant(group_id: int, project_id: int) -> None:
    row = service.find_grant(session(), current_access(), group_id, project_id, lock=True)
    blp.check_etag(service.grant_etag_data(row))
