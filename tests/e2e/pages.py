"""Every page of the portal, as the browser walks open it: a URL for each page endpoint (GET,
HTML, outside /api) with its ids taken from the populated portal, and who may open it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask

from tests.e2e.populated import USE_PERIOD, Populated

#: the walks' users: what each stands for
ROLES = {
    "admin": "platform admin",
    "erin": "domain admin (research, nlp's domain)",
    "mia": "project manager (nlp)",
    "alice": "member (nlp)",
    "dave": "member of another tenant (cs101, teaching)",
}
EVERYONE = frozenset(ROLES)
ADMINS = frozenset({"admin", "erin"})
NLP = frozenset({"admin", "erin", "mia", "alice"})
MANAGERS = frozenset({"admin", "erin", "mia"})
PLATFORM = frozenset({"admin"})


@dataclass(frozen=True)
class Page:
    name: str  # the screenshot's file name
    endpoint: str
    url: Callable[[Populated], str]
    who: frozenset[str] = EVERYONE  # who opens it (200); the others get 403 or 404
    ready: str | None = None  # what a script draws, waited for before the page is read


def _ids(path: str) -> Callable[[Populated], str]:
    return lambda s: path.format(**s.ids, **s.names, period=USE_PERIOD)


PAGES: tuple[Page, ...] = (
    Page("dashboard", "dashboard.index", _ids("/")),
    Page("account", "identity_pages.password", _ids("/account/password")),
    Page("jobs", "jobs_pages.index", _ids("/jobs")),
    Page("job-new", "jobs_pages.submit", _ids("/jobs/new")),
    Page("job-running", "jobs_pages.detail", _ids("/jobs/{job}"), NLP),
    Page("job-pending", "jobs_pages.detail", _ids("/jobs/{pending_job}"), NLP),
    Page("job-cancel", "jobs_pages.cancel", _ids("/jobs/{pending_job}/cancel"), NLP),
    Page("history", "jobs_pages.history_index", _ids("/jobs/history")),
    Page("models", "registry_pages.index", _ids("/models")),
    Page("model", "registry_pages.detail", _ids("/models/{model}"), NLP),
    Page("presets", "registry_pages.preset_list", _ids("/presets")),
    Page("mirror", "registry_pages.preset_mirror", _ids("/presets/mirror"), PLATFORM),
    Page("inference", "inference_pages.index", _ids("/inference")),
    Page("service", "inference_pages.detail", _ids("/inference/{service}"), NLP),
    Page("datasets", "datasets_pages.index", _ids("/datasets")),
    Page("dataset", "datasets_pages.detail", _ids("/datasets/{dataset}"), NLP),
    Page(
        "dataset-file",
        "datasets_pages.file_preview",
        _ids("/datasets/{dataset}/v/{version}/preview/{file}"),
        NLP,
    ),
    Page("labelling", "labelling_pages.index", _ids("/labelling")),
    Page("labelling-task", "labelling_pages.task", _ids("/labelling/tasks/{task}"), NLP),
    Page(
        "labelling-item",
        "labelling_pages.annotate",
        _ids("/labelling/tasks/{task}/items/{item}"),
        NLP,
    ),
    Page("projects", "tenancy_pages.projects", _ids("/projects")),
    Page("project", "tenancy_pages.project", _ids("/projects/{project}"), NLP),
    Page("quotas", "quotas_pages.index", _ids("/quotas")),
    Page("nodes", "nodes_pages.index", _ids("/nodes")),
    Page("catalogue", "catalogue_pages.index", _ids("/catalogue")),
    Page("charts", "nodes_pages.charts", _ids("/nodes/charts?window=1h"), ready="#charts .uplot"),
    Page("usage", "usage_pages.index", _ids("/usage?{period}")),
    Page("usage-domain", "usage_pages.domain", _ids("/usage/domains/research?{period}"), NLP),
    Page("usage-project", "usage_pages.project", _ids("/usage/projects/nlp?{period}"), NLP),
    Page("usage-user", "usage_pages.user", _ids("/usage/projects/nlp/users/alice?{period}"), NLP),
    Page("billing", "usage_pages.overview", _ids("/usage/billing")),
    Page("bills", "usage_pages.bills", _ids("/usage/billing/nlp"), NLP),  # members: balance, month
    Page("plans", "usage_pages.plan_editor", _ids("/usage/billing/plans"), PLATFORM),
    Page(
        "plans-yaml", "usage_pages.plan_advanced", _ids("/usage/billing/plans/advanced"), PLATFORM
    ),
    Page("domains", "tenancy_admin.domains", _ids("/domains")),
    Page("users", "users_pages.index", _ids("/users"), ADMINS),
    Page("user", "users_pages.detail", _ids("/users/{user}"), ADMINS),
    Page("user-new", "users_pages.new", _ids("/users/new"), ADMINS),
    Page("groups", "tenancy_admin.group_list", _ids("/groups")),
    Page("roles", "roles_pages.index", _ids("/roles"), ADMINS),
    Page("role", "roles_pages.edit", _ids("/roles/{role}"), ADMINS),
    Page("role-new", "roles_pages.new", _ids("/roles/new"), PLATFORM),
    Page("clusters", "clusters_pages.index", _ids("/clusters"), ADMINS),
    Page("audit", "audit_pages.index", _ids("/audit"), ADMINS),
    Page("alerts", "alerts_pages.index", _ids("/alerts"), MANAGERS),
)
#: pages seen before signing in
ANONYMOUS = (Page("login", "identity_pages.login", _ids("/login")),)
#: GET endpoints outside /api that are not pages of their own
NOT_PAGES = {
    "static": "the style sheet, scripts and images",
    "favicon": "the site's icon",
    "branding_logo": "the site's logo",
    "audit_pages.export": "the audit log as CSV",
    "jupyter_proxy.forward": "a job's own notebook server, relayed",
    "metrics": "Prometheus's scrape of the portal (text, behind a token or an allow-list)",
}


def page_endpoints(app: Flask) -> set[str]:
    """The endpoints a person opens in a browser: GET, outside /api."""
    return {
        rule.endpoint
        for rule in app.url_map.iter_rules()
        if "GET" in (rule.methods or ()) and not rule.rule.startswith("/api")
    }
