"""The application factory."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flask import Flask, has_request_context, request
from flask.sessions import SecureCookieSessionInterface
from flask_smorest import Api
from flask_smorest.spec.plugins import integerconverter2paramschema
from marshmallow import fields as ma_fields
from marshmallow import validate as ma_validate
from sqlalchemy.engine import make_url
from werkzeug.routing import BaseConverter, IntegerConverter

from portal import (
    alerts,
    audit,
    catalogue,
    clusters,
    config,
    dashboard,
    datasets,
    errors,
    i18n,
    identity,
    inference,
    jobs,
    labelling,
    metrics,
    nodes,
    quotas,
    registry,
    roles,
    site,
    tenancy,
    usage,
    web,
)
from portal.extensions import api, csrf, db, limiter, login_manager, migrate

MIGRATIONS = str(Path(__file__).with_name("migrations"))

#: The packages that make up the portal, in order (the API document lists their operations
#: so). Each one's ``register(app, api)`` adds its API blueprints, pages and commands.
RESOURCES: tuple[Callable[[Flask, Api], None], ...] = (
    identity.register,
    site.register,
    dashboard.register,
    roles.register,
    tenancy.register,
    quotas.register,
    jobs.register,
    nodes.register,
    audit.register,
    datasets.register,
    labelling.register,
    usage.register,
    registry.register,
    inference.register,
    clusters.register,
    catalogue.register,
    alerts.register,
    metrics.register,
)


class IdConverter(IntegerConverter):
    """``<id:project_id>``: a row id, 1 … 2³¹-1 (what every database's integer key holds)."""

    def __init__(self, map: Any) -> None:
        super().__init__(map, min=1, max=2**31 - 1)


class NameConverter(BaseConverter):
    """``<name:alias>``: a letter, then letters, digits, ``_`` and ``-`` (64 at most); any
    other path is no such resource (404), as the OpenAPI document's pattern says."""

    regex = r"[A-Za-z][A-Za-z0-9_-]{0,63}"


def _name_param(_converter: BaseConverter) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^{NameConverter.regex}$"}


class PortalSessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, with ``Secure`` following the request's scheme unless
    ``SESSION_COOKIE_SECURE`` says otherwise (portal.web keeps the session's state on the
    server; the cookie only names it)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        configured = app.config["SESSION_COOKIE_SECURE"]
        if configured is None:
            return has_request_context() and request.is_secure
        return bool(configured)


def _private_home(app: Flask) -> None:
    """The portal's home: users' jobs pass through it (0711) to the directories they are
    given, but list nothing; its SQLite database (password and token hashes) is the portal's
    alone (0600, and so are the journal files SQLite makes beside it)."""
    home = Path(app.instance_path)
    home.mkdir(parents=True, exist_ok=True)
    if home.stat().st_uid == os.geteuid():
        home.chmod(0o711)
    url = make_url(str(app.config["SQLALCHEMY_DATABASE_URI"]))
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        db_file = Path(url.database)
        if db_file.parent.is_dir():
            os.close(os.open(db_file, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            if db_file.stat().st_uid == os.geteuid():
                db_file.chmod(0o600)


def create_app(settings: Mapping[str, Any] | None = None) -> Flask:
    """Build the portal: defaults, then ``AIPOOL_*`` environment, then ``settings``."""
    # the portal's one home: its SQLite database, dataset versions, model artifacts and job
    # directories default to places under it (AIPOOL_PORTAL_HOME; the lab's is under its root)
    home = (settings or {}).get("PORTAL_HOME") or os.environ.get("AIPOOL_PORTAL_HOME")
    app = Flask(__name__, instance_relative_config=True, instance_path=home or None)
    app.url_map.converters["id"] = IdConverter
    app.session_interface = PortalSessionInterface()
    app.url_map.converters["name"] = NameConverter
    config.load(app, settings)
    _private_home(app)
    logging.getLogger("aipool.portal").setLevel(app.config.get("LOG_LEVEL", "INFO"))

    db.init_app(app)
    migrate.init_app(app, db, directory=MIGRATIONS, render_as_batch=True)
    login_manager.init_app(app)
    csrf.init_app(app)
    limiter.init_app(app)
    i18n.install(app)
    api.init_app(app)
    api.register_converter(IdConverter, integerconverter2paramschema)
    api.register_converter(NameConverter, _name_param)
    api.ma_plugin.converter.add_attribute_function(_dict_rules)
    web.install(app)
    for register in RESOURCES:
        register(app, api)
    _schema_rules()
    # a header is text: the pagination metadata travels as a JSON object written out
    api.spec.components.headers["PAGINATION"] = {
        "description": "Pagination metadata as JSON text: an object with total, total_pages, "
        "first_page, last_page, page, previous_page and next_page (integers)",
        "schema": {"type": "string", "example": '{"total": 42, "total_pages": 3, "page": 1}'},
    }
    errors.register(app)
    return app


def _dict_rules(_self: Any, field: Any, ret: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
    """A mapping's rules in the document as marshmallow enforces them: the number of entries
    (``maxProperties``, where apispec writes a string's ``maxLength``) and the length of its
    keys (``propertyNames``; apispec states only the values' schema)."""
    if not isinstance(field, ma_fields.Dict):
        return {}
    extra: dict[str, Any] = {}
    for rule in field.validators:
        if isinstance(rule, ma_validate.Length):
            ret.pop("maxLength", None)
            ret.pop("minLength", None)
            bounds = {"minProperties": rule.min, "maxProperties": rule.max}
            extra |= {k: v for k, v in bounds.items() if v is not None}
    for rule in getattr(field.key_field, "validators", []) if field.key_field else []:
        if isinstance(rule, ma_validate.Length):
            bounds = {"minLength": rule.min, "maxLength": rule.max}
            extra["propertyNames"] = {k: v for k, v in bounds.items() if v is not None}
    return extra


def _schema_rules() -> None:
    """Rules of whole bodies in the document, as the schemas' validators enforce them: every
    PATCH body (``ChangeSchema``) may not be empty; a schema's ``OPENAPI_EXTRA`` (e.g. the
    fields each ``source`` needs) is merged into its entry."""
    from marshmallow import Schema

    from portal.schemas import ChangeSchema

    def subclasses(cls: type) -> list[type]:
        found: list[type] = []
        sub: type
        for sub in cls.__subclasses__():
            found += [sub, *subclasses(sub)]
        return found

    documented = api.spec.components.schemas
    for cls in subclasses(Schema):
        name = api.ma_plugin.schema_name_resolver(cls)
        if name not in documented:
            continue
        if issubclass(cls, ChangeSchema):
            documented[name]["minProperties"] = 1
        documented[name].update(getattr(cls, "OPENAPI_EXTRA", {}))
