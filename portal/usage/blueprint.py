"""The usage pages' blueprint: the usage drill-down (:mod:`portal.usage.pages`), bills
(:mod:`portal.usage.billing_pages`) and price plans (:mod:`portal.usage.plan_pages`) add their
routes to it, and :func:`portal.usage.register` installs it once all three are loaded."""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("usage_pages", __name__)
