"""Configuration: defaults, then ``AIPOOL_*`` environment variables, then the caller's mapping.

Environment values are parsed as JSON where they parse (``AIPOOL_LOGIN_RATE_LIMIT="5 per
minute"`` stays a string, ``AIPOOL_SLURM_ENV='{"SLURM_CONF": "/etc/slurm/slurm.conf"}'`` becomes
a dict). ``AIPOOL_DATABASE_URL`` is the database URL (``sqlite:///…`` or
``postgresql+psycopg://…``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path
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
    # None: Secure exactly when the request came over HTTPS (directly, or from one of the
    # TRUSTED_PROXIES that says so in X-Forwarded-Proto); true/false: always/never
    "SESSION_COOKIE_SECURE": None,
    "WTF_CSRF_CHECK_DEFAULT": False,  # checked in a before_request hook: bearer calls skip it
    "WTF_CSRF_TIME_LIMIT": None,
    # login throttling
    "LOGIN_RATE_LIMIT": "10 per minute",
    # failed sign-ins per account before it is refused for the rest of the window (None: off)
    "ACCOUNT_LOCKOUT": "10 per 15 minutes",
    "RATELIMIT_STORAGE_URI": "memory://",
    "RATELIMIT_HEADERS_ENABLED": True,
    "PASSWORD_MIN_LENGTH": 10,
    # a browser session ends this many hours after sign-in, or at sign-out, a password change,
    # a reset or deactivation (sessions are kept on the server)
    "SESSION_MAX_AGE_HOURS": 24,
    "API_TOKEN_DAYS": 90,
    # the hosts a tenant admin's webhook channel may post to (platform admins: any): the
    # robots of WeCom, DingTalk and Feishu/Lark; a site adds its own receivers here
    "ALERT_WEBHOOK_HOSTS": [
        "qyapi.weixin.qq.com",
        "oapi.dingtalk.com",
        "open.feishu.cn",
        "open.larksuite.com",
    ],
    # Slurm
    "SLURM_ENV": {},  # e.g. {"SLURM_CONF": "/tmp/aipool-lab/etc/slurm.conf"}
    "SLURM_REST_URL": None,  # e.g. http://127.0.0.1:6820
    # the token service's socket: it mints users' slurmrestd tokens (the portal never reads
    # the cluster's JWT key), each lasting SLURM_TOKEN_LIFESPAN seconds
    "SLURM_TOKEN_SOCKET": None,
    "SLURM_TOKEN_LIFESPAN": 120,
    "SLURM_TIMEOUT": 30.0,
    "SLURM_CACHE_SECONDS": 2.0,  # queue and node reads shared by all pages for this long
    "SLURM": None,  # a ready SlurmPort (tests); else built from the settings above
    # working directory of portal-submitted jobs; "{user}" is replaced. None: the user's own
    # directory under USER_DIRS (portal/userdirs.py)
    "JOB_WORKDIR": None,
    "USER_DIRS": None,  # users' directories (2750, group SERVICE_GROUP); None: <instance>/users
    "SERVICE_GROUP": "aipool",  # the portal's group: it reads users' job files through it
    # the root helper that makes and removes users' directories (aipool/roothelper.py), e.g.
    # "sudo -n /usr/local/libexec/aipool-helper" (a list or a shell-quoted string); None: none
    "ROOT_HELPER": None,
    "JOB_OUTPUT": "slurm-%j.out",
    "JOB_SCRIPT_MAX_BYTES": 65536,
    # datasets (docs/datasets.md)
    "DATASET_STORAGE": None,  # None: <instance>/datasets; must be readable on the nodes
    "DATASET_QUOTA_BYTES": 100 * 2**30,  # per project, all versions
    "DATASET_MAX_FILE_BYTES": 20 * 2**30,
    # the largest request body; None: the largest upload above plus 1 MiB for the form's parts
    "MAX_CONTENT_LENGTH": None,
    "DATASET_MAX_FILES": 1_000_000,
    "DATASET_IMPORT_ROOTS": [],  # cluster paths one may import from; "{user}" is replaced
    "DATASET_S3_STORES": {},  # name -> {endpoint_url, region, access_key, secret_key}
    # model registry and inference services (docs/models.md)
    "MODEL_STORAGE": None,  # artifacts; None: <instance>/models
    "MODEL_MIRROR": None,  # offline mirror of hub weights for presets; None: <instance>/mirror
    "MODEL_WORK": None,  # per-job directories of model jobs; None: <instance>/model-work
    "MODEL_IMPORT_ROOTS": [],  # directories Hugging Face / ModelScope layouts import from
    "MODEL_KEY": None,  # master key of the per-tenant artifact keys; None: from SECRET_KEY
    # the job runtime every cluster user can run (scripts/install-runtime.sh; the lab's is
    # /opt/aipool/runtime): model jobs run its Python, Jupyter jobs its JupyterLab
    "JOB_RUNTIME": None,
    # the portal's home (also AIPOOL_PORTAL_HOME): database, datasets, models, job directories
    # default to it; None: Flask's instance folder beside the code
    "PORTAL_HOME": None,
    "MODEL_PYTHON": None,  # the Python that model jobs run; None: JOB_RUNTIME's, else the portal's
    "MODEL_UPLOAD_MAX_BYTES": 512 * 1024**2,
    "MODEL_JOB_OUTPUT_MAX_BYTES": 64 * 1024**3,  # what a training job's output may hold
    "INFERENCE_TIMEOUT": 30.0,  # seconds for one proxied call
    # the ports jobs' servers (Jupyter, inference replicas) listen on, "LOW-HIGH": the portal
    # proxies to no other port (portal/upstream.py); keep every service's port out of it
    "PROXY_PORT_RANGE": "50000-59999",
    # the reverse proxies in front of the portal (addresses or networks) whose
    # X-Forwarded-For and X-Forwarded-Proto it believes; empty: it believes nobody's
    "TRUSTED_PROXIES": [],
    "CLOCK": None,  # a callable returning the UTC time (tests); None: the system clock
    # the node agent's utilisation samples (aipool node agent --out); None: no job charts
    "SAMPLES_DIR": None,
    # the compute scores per node kind (aipool gres score run --store); None: none shown
    "SCORES_FILE": None,
    # the elastic nodes' configuration (aipool power; its event log gives the energy saved);
    # None: no energy saved shown
    "POWER_CONFIG": None,
    # the policy daemon's state directory (its decision log: why it holds or steers a job,
    # shown on the job's page); None: no policy reasons shown
    "POLICY_STATE_DIR": None,
    # the policy daemon's configuration file: the quotas it guarantees and lets projects borrow
    # (its capacity policy), shown on the quotas page and the job form; None: none shown
    "POLICY_CONFIG": None,
    # the control daemon's capacity samples for the monitoring charts (portal/nodes/sampling.py):
    # seconds between samples, and how long minute rows and hourly rows are kept
    "SAMPLE_EVERY_S": 60,
    "SAMPLE_KEEP_MINUTES_H": 48,
    "SAMPLE_KEEP_HOURS_D": 400,
    # the admission hook rendered from the portal's tenants: a base policy file (cluster,
    # pools; None: the lab's) and the directory slurmctld reads job_submit.lua from
    "ADMISSION_POLICY": None,
    "ADMISSION_DIR": None,
    # languages (portal/i18n.py): zh_CN or en when neither the user nor the browser says;
    # dates are shown in TIMEZONE (an IANA name)
    "DEFAULT_LOCALE": "en",
    "TIMEZONE": "UTC",
    # branding: the site's name, a logo file (PNG, SVG, JPEG, ICO) and header/accent colours
    "SITE_NAME": "AIPool",
    "SITE_LOGO": None,
    "SITE_COLOURS": {},
    # the portal's /metrics for Prometheus (portal/metrics): a scrape token (Authorization:
    # Bearer) and/or the client addresses and networks let in; neither: no /metrics (404)
    "METRICS_TOKEN": None,
    "METRICS_ALLOW": [],
}


def load(app: Flask, overrides: Mapping[str, Any] | None) -> None:
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("AIPOOL")
    if overrides:
        app.config.from_mapping(overrides)
    url = app.config["DATABASE_URL"] or f"sqlite:///{app.instance_path}/portal.db"
    app.config["SQLALCHEMY_DATABASE_URI"] = url
    if app.config["MAX_CONTENT_LENGTH"] is None:
        largest = max(app.config["DATASET_MAX_FILE_BYTES"], app.config["MODEL_UPLOAD_MAX_BYTES"])
        app.config["MAX_CONTENT_LENGTH"] = int(largest) + 2**20
    if not app.config["SECRET_KEY"]:
        raise RuntimeError("the portal needs a secret key: set AIPOOL_SECRET_KEY")
    check_branding(app.config)


#: Colours the templates use, each a CSS hex colour; they reach a <style> block, so nothing
#: but ``#`` and hex digits is accepted.
COLOURS = {"header": "#1d2433", "header_text": "#cfd8ea", "accent": "#3b6fd8"}
_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
LOGO_TYPES = {
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".ico": "image/x-icon",
}


def check_branding(cfg: MutableMapping[str, Any]) -> None:
    """Validate the branding settings once, at start-up, naming what is wrong."""
    problems = []
    name = cfg["SITE_NAME"]
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or not name.isprintable():
        problems.append("SITE_NAME: 1-64 printable characters")
    colours = cfg["SITE_COLOURS"]
    if not isinstance(colours, Mapping):
        problems.append(f"SITE_COLOURS: a mapping of {', '.join(COLOURS)} to #rgb or #rrggbb")
        colours = {}
    for key, value in colours.items():
        if key not in COLOURS:
            problems.append(f"SITE_COLOURS.{key}: unknown, use {', '.join(COLOURS)}")
        elif not isinstance(value, str) or not _HEX.match(value):
            problems.append(f"SITE_COLOURS.{key}: a hex colour such as #1d2433")
    logo = cfg["SITE_LOGO"]
    if logo is not None:
        path = Path(str(logo))
        if path.suffix.lower() not in LOGO_TYPES:
            problems.append(f"SITE_LOGO: one of {', '.join(sorted(LOGO_TYPES))}")
        elif not path.is_file():
            problems.append(f"SITE_LOGO: {path} is not a readable file")
    if problems:
        raise RuntimeError("branding settings: " + "; ".join(problems))
    cfg["SITE_COLOURS"] = {**COLOURS, **colours}
