"""Branding from the settings: the site's name, logo and colours on every page, checked
once at start-up so nothing but a hex colour reaches the page's style."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from portal import create_app
from tests.unit.portal.conftest import BASE, Env
from tests.unit.portal.world import World

LOGO = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8"/></svg>'


def _app(tmp: Path, seeded: tuple[Path, World], **settings: Any) -> Any:
    db = tmp / "portal.db"
    shutil.copyfile(seeded[0], db)
    return create_app({**BASE, "DATABASE_URL": f"sqlite:///{db}", **settings})


def test_name_logo_and_colours_on_the_pages(tmp_path: Path, seeded_db: tuple[Path, World]) -> None:
    logo = tmp_path / "logo.svg"
    logo.write_text(LOGO)
    app = _app(
        tmp_path,
        seeded_db,
        SITE_NAME="Lab Cluster <B>",
        SITE_LOGO=str(logo),
        SITE_COLOURS={"header": "#123456", "accent": "#abc"},
    )
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    assert (
        "<title>Log in · Lab Cluster &lt;B&gt;</title>" in page or "· Lab Cluster &lt;B&gt;" in page
    )
    assert "--header: #123456" in page
    assert "--accent: #abc" in page
    assert "--header-text: #cfd8ea" in page  # the default where none is set
    assert 'src="/branding/logo"' in page
    r = client.get("/branding/logo")
    assert r.status_code == 200
    assert r.mimetype == "image/svg+xml"
    assert r.get_data(as_text=True) == LOGO
    r.close()


def test_defaults_show_aipool_and_no_logo(env: Env) -> None:
    client = env.app.test_client()
    page = client.get("/login").get_data(as_text=True)
    assert "· AIPool</title>" in page
    assert "branding/logo" not in page
    assert client.get("/branding/logo").status_code == 404


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"SITE_COLOURS": {"header": "red; } body { display: none"}}, "SITE_COLOURS.header"),
        ({"SITE_COLOURS": {"footer": "#fff"}}, "SITE_COLOURS.footer"),
        ({"SITE_COLOURS": ["#fff"]}, "SITE_COLOURS"),
        ({"SITE_NAME": ""}, "SITE_NAME"),
        ({"SITE_NAME": "two\nlines"}, "SITE_NAME"),
        ({"SITE_LOGO": "/etc/passwd"}, "SITE_LOGO"),
        ({"SITE_LOGO": "/nonexistent/logo.png"}, "SITE_LOGO"),
    ],
)
def test_bad_branding_is_refused_at_start(
    tmp_path: Path, seeded_db: tuple[Path, World], settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(RuntimeError, match=named.replace(".", r"\.")):
        _app(tmp_path, seeded_db, **settings)
