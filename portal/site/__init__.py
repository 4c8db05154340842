"""What every page shares: the site's name, logo and colours, and the navigation."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The logo's address and what the page layout reads (``site``, ``nav_domain_admin``)."""
    from portal.site import pages

    app.add_url_rule("/branding/logo", "branding_logo", pages.logo)
    app.context_processor(pages.branding)
    app.context_processor(pages.navigation)
