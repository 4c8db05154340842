"""Configuration: defaults, then ``AIPOOL_*`` environment variables, then the caller's mapping.

Environment values are parsed as JSON where they parse (``AIPOOL_LOGIN_RATE_LIMIT="5 per
minute"`` stays a string, ``AIPOOL_SLURM_ENV='{"SLURM_CONF": "/etc/slurm/slurm.conf"}'`` becomes
a dict). ``AIPOOL_DATABASE_URL`` is the database URL (``sqlite:///…`` or
``postgresql+psycopg://…``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask

DEFAULTS: dict[str, Any] = {
    "SECRET_KEY": None,  # required: AIPOOL_SECRET_KEY
    "DATABASE_URL": None,  # None: sqlite file in the instance folder
    "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
    # flask-smorest / OpenAPI
    "API_TITLE": "AIPool portal",
    "API_VERSION": "v1",
    "OPENAPI_VERSION": "3.0.3",
    "OPENAPI_URL_PREFIX": "/api/v1",
    "OPENAPI_JSON_PATH": "openapi.json",
    "OPENAPI_SWAGGER_UI_PATH": None,
    "API_SPEC_OPTIONS": {
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "session"},
            }
        },
        "security": [{"bearer": []}, {"session": []}],
    },
    # sessions and CSRF
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_SECURE": False,  # set true behind TLS
    "WTF_CSRF_CHECK_DEFAULT": False,  # checked in a before_request hook: bearer calls skip it
    "WTF_CSRF_TIME_LIMIT": None,
    # login throttling
    "LOGIN_RATE_LIMIT": "10 per minute",
    "RATELIMIT_STORAGE_URI": "memory://",
    "RATELIMIT_HEADERS_ENABLED": True,
    "PASSWORD_MIN_LENGTH": 10,
    "API_TOKEN_DAYS": 90,
    # Slurm
    "SLURM_ENV": {},  # e.g. {"SLURM_CONF": "/tmp/aipool-lab/etc/slurm.conf"}
    "SLURM_REST_URL": None,  # e.g. http://127.0.0.1:6820
    "SLURM_JWT_KEY_FILE": None,  # the cluster's jwt key, readable only by the portal's user
    "SLURM_TIMEOUT": 30.0,
    "SLURM_CACHE_SECONDS": 2.0,  # queue and node reads shared by all pages for this long
    "SLURM": None,  # a ready SlurmPort (tests); else built from the settings above
    "JOB_WORKDIR": "/tmp",  # working directory of portal-submitted jobs; "{user}" is replaced
    "JOB_OUTPUT": "slurm-%j.out",
    "JOB_SCRIPT_MAX_BYTES": 65536,
}


def load(app: Flask, overrides: Mapping[str, Any] | None) -> None:
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("AIPOOL")
    if overrides:
        app.config.from_mapping(overrides)
    url = app.config["DATABASE_URL"] or f"sqlite:///{app.instance_path}/portal.db"
    app.config["SQLALCHEMY_DATABASE_URI"] = url
    if not app.config["SECRET_KEY"]:
        raise RuntimeError("the portal needs a secret key: set AIPOOL_SECRET_KEY")
