"""What every page shares: the site's name, logo and colours, the navigation, the language
switcher and the icon."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The logo's address and what the page layout reads (``site``, ``nav_domain_admin``)."""
    from portal.site import pages

    app.add_url_rule("/branding/logo", "branding_logo", pages.logo)
    app.add_url_rule("/favicon.ico", "favicon", pages.favicon)
    app.add_url_rule("/language", "choose_language", pages.choose_language, methods=["POST"])
    app.context_processor(pages.branding)
    app.context_processor(pages.navigation)
