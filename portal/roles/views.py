"""API: project roles (built-in and custom)."""

from __future__ import annotations

from typing import Any

from portal.pagination import PageParams, page_of_query
from portal.roles import service
from portal.roles.models import Role
from portal.roles.schemas import RoleSchema, RoleUpdateSchema
from portal.web import AuthedView, Blueprint, current_access, locked, session

blp = Blueprint("roles", __name__, url_prefix="/api/v1/roles", description="Project roles")


@blp.route("")
class Roles(AuthedView):
    @blp.response(200, RoleSchema(many=True))
    @blp.paginate()
    def get(self, pagination_parameters: PageParams) -> list[Role]:
        return page_of_query(session(), service.roles_query(), pagination_parameters)

    @blp.arguments(RoleSchema)
    @blp.response(201, RoleSchema)
    def post(self, args: dict[str, Any]) -> Role:
        """Create a custom role from grantable permissions (platform admin)."""
        return service.create_role(session(), current_access(), args)


@blp.route("/<id:role_id>")
class RoleById(AuthedView):
    @blp.etag
    @blp.response(200, RoleSchema)
    def get(self, role_id: int) -> Role:
        return service.get_role(session(), role_id)

    @blp.etag
    @blp.arguments(RoleUpdateSchema)
    @blp.response(200, RoleSchema)
    def patch(self, args: dict[str, Any], role_id: int) -> Role:
        """Rename a custom role or change its permissions (platform admins). With
        ``If-Match``, a role changed since that ETag is 412 and nothing changes."""
        _check_unchanged(role_id)
        return service.update_role(session(), current_access(), role_id, args)

    @blp.etag
    @blp.response(204)
    def delete(self, role_id: int) -> None:
        """Delete a custom role no one holds (platform admins); ``If-Match`` as for PATCH."""
        _check_unchanged(role_id)
        service.delete_role(session(), current_access(), role_id)


def _check_unchanged(role_id: int) -> None:
    blp.check_etag(locked(service.editable_role(session(), current_access(), role_id)), RoleSchema)
