"""API: tokens, the caller's own account, and users."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from flask.views import MethodView
from marshmallow import Schema

from portal.errors import Unauthorized
from portal.i18n import gettext
from portal.identity import admin, service
from portal.identity.limits import sign_in_limits
from portal.identity.models import ApiToken, User
from portal.identity.schemas import (
    NewTokenSchema,
    PasswordChangeSchema,
    PasswordResetSchema,
    PasswordSchema,
    TokenCreatedSchema,
    TokenRequestSchema,
    TokenSchema,
    UserCreatedSchema,
    UserCreateSchema,
    UserQuerySchema,
    UserSchema,
    UserUpdateSchema,
)
from portal.pagination import PageParams, page_of_query
from portal.quotas import service as quotas
from portal.slurm import slurm
from portal.web import AuthedView, Blueprint, caller, current_access, session, setting

auth = Blueprint("auth", __name__, url_prefix="/api/v1/auth", description="Login and tokens")
users = Blueprint("users", __name__, url_prefix="/api/v1/users", description="Users")


def _raw(obj: object, schema: type[Schema]) -> dict[str, Any]:
    """The object's attributes that ``schema`` shows, not yet serialised."""
    return {name: getattr(obj, name) for name in schema().fields}


def _token_data(token: ApiToken, secret: str) -> dict[str, Any]:
    return {**_raw(token, TokenSchema), "token": secret}


@auth.route("/token")
class Token(MethodView):
    decorators: ClassVar[list[Callable[..., Any]]] = sign_in_limits()

    @auth.arguments(TokenRequestSchema)
    @auth.response(201, TokenCreatedSchema)
    @auth.doc(security=[])
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Exchange a user name and password for an API token (rate-limited per address, and
        per account after failed attempts: 429 with ``Retry-After``)."""
        user = service.authenticate(session(), args["username"], args["password"])
        if user is None:
            raise Unauthorized(gettext("Wrong user name or password."))
        days = args.get("days") or setting("API_TOKEN_DAYS")
        token, secret = service.create_token(session(), user, args["name"], days=days)
        return _token_data(token, secret)


@auth.route("/me")
class Me(AuthedView):
    @auth.response(200, UserSchema)
    def get(self) -> User:
        return caller()


@auth.route("/password")
class Password(AuthedView):
    @auth.arguments(PasswordChangeSchema)
    @auth.response(204)
    def post(self, args: dict[str, Any]) -> None:
        """Change one's own password (signs out one's other sessions)."""
        service.change_password(
            session(),
            caller(),
            args["current_password"],
            args["new_password"],
            min_length=setting("PASSWORD_MIN_LENGTH"),
        )


@auth.route("/tokens")
class Tokens(AuthedView):
    @auth.response(200, TokenSchema(many=True))
    @auth.paginate()
    def get(self, pagination_parameters: PageParams) -> list[ApiToken]:
        return page_of_query(session(), service.tokens_query(caller()), pagination_parameters)

    @auth.arguments(NewTokenSchema)
    @auth.response(201, TokenCreatedSchema)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        days = args.get("days") or setting("API_TOKEN_DAYS")
        token, secret = service.create_token(session(), caller(), args["name"], days=days)
        return _token_data(token, secret)


@auth.route("/tokens/<id:token_id>")
class TokenById(AuthedView):
    @auth.response(204)
    def delete(self, token_id: int) -> None:
        service.revoke_token(session(), caller(), token_id)


@users.route("")
class Users(AuthedView):
    @users.arguments(UserQuerySchema, location="query")
    @users.response(200, UserSchema(many=True))
    @users.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[User]:
        """Users the caller may see (platform admins: all)."""
        stmt = service.users_query(current_access(), args.get("q"))
        return page_of_query(session(), stmt, pagination_parameters)

    @users.arguments(UserCreateSchema)
    @users.response(201, UserCreatedSchema)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Create a user; a password is generated when none is given.

        Platform admins create anyone; ``project_id`` (with ``role_id``, else ``member``)
        makes the user a member of that project at once. Domain admins create users who are
        not platform admins, and must name a project of their domain. A given password must
        be long and strong enough (``PASSWORD_MIN_LENGTH``, a common-password check): 422
        otherwise, naming why."""
        user, password, project = admin.create_user(
            session(), current_access(), args, min_length=setting("PASSWORD_MIN_LENGTH")
        )
        if project is not None:  # the new member may submit at once, as for any member
            quotas.enforce_project(session(), current_access(), slurm(), project.id)
        shown = None if args.get("password") else password
        return {**_raw(user, UserSchema), "password": shown}


@users.route("/<id:user_id>")
class UserById(AuthedView):
    @users.response(200, UserSchema)
    def get(self, user_id: int) -> User:
        return service.get_user(session(), current_access(), user_id)

    @users.arguments(UserUpdateSchema)
    @users.response(200, UserSchema)
    def patch(self, args: dict[str, Any], user_id: int) -> User:
        """Change a user: one's own name and e-mail; an admin's users (platform admins any;
        domain admins users who belong to their domains only, never platform admins):
        ``active``; ``is_platform_admin``: platform admins only."""
        return admin.update_user(session(), current_access(), user_id, args)


@users.route("/<id:user_id>/password")
class UserPassword(AuthedView):
    @users.arguments(PasswordResetSchema)
    @users.response(200, PasswordSchema)
    def post(self, args: dict[str, Any], user_id: int) -> dict[str, Any]:
        """Reset a user's password (platform admins; domain admins for users who belong to
        their domains only); returns it. Every session and API token of the user ends."""
        password = admin.reset_password(
            session(),
            current_access(),
            user_id,
            args.get("password"),
            min_length=setting("PASSWORD_MIN_LENGTH"),
        )
        return {"password": password}
