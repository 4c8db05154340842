"""Flask extensions, created once and bound to an app in :func:`portal.app.create_app`."""

from __future__ import annotations

import marshmallow as ma
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_smorest import Api
from flask_smorest import etag as fs_etag
from flask_smorest.error_handler import ErrorSchema
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy.orm import DeclarativeBase

import dbtypes


class Base(DeclarativeBase):
    # named constraints, so Alembic can alter them (SQLite batch mode needs names); importing
    # dbtypes also makes SQLite check foreign keys
    metadata = dbtypes.metadata()


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
login_manager = LoginManager()
csrf = CSRFProtect()
limiter = Limiter(key_func=get_remote_address)


class PortalErrorSchema(ErrorSchema):
    """Errors as the portal sends them: smorest's fields and the domain error's code."""

    error = ma.fields.String(
        metadata={"description": "not_found, forbidden, conflict, quota_exceeded, …"}
    )


class PortalApi(Api):
    ERROR_SCHEMA = PortalErrorSchema

    def _register_etag_headers(self) -> None:
        """As flask-smorest's, but ``If-Match`` is optional (portal.web.Blueprint says why)."""
        if_match = {
            **fs_etag.IF_MATCH_HEADER,
            "required": False,
            "description": "The ETag the caller read; another one is refused with 412 and "
            "nothing changes. Without it the update applies to whatever is current.",
        }
        self.spec.components.parameter(
            "IF_NONE_MATCH", "header", fs_etag.IF_NONE_MATCH_HEADER, lazy=True
        )
        self.spec.components.parameter("IF_MATCH", "header", if_match, lazy=True)
        self.spec.components.header("ETAG", fs_etag.ETAG_HEADER, lazy=True)


api = PortalApi()
