"""Every page of the portal in Debian's headless Chromium, for each kind of user, in Chinese
and in English, at desktop and at phone width: a screenshot of each kept for a person to look
at (the path is printed), and on each page axe-core (injected by Playwright) finding no serious
or critical accessibility violation, the page in the reader's language (no message of the
catalogue left in English, no Slurm code outside its <code>, no "None"), nothing wider than a
phone's screen, no script error, and nothing of nlp for a user of another tenant.

The pages come from the app's url_map (tests/e2e/pages.py): a page added without a place in
the walk fails the walk. One portal serves the whole module; a user's two languages are walked
at the same time, each by its own browser, each in one browser context signed in once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.e2e.pages import ANONYMOUS, NOT_PAGES, PAGES, ROLES, page_endpoints
from tests.e2e.populated import Populated, populated_portal
from tests.e2e.walking import (
    ANONYMOUS as NO_ONE,
)
from tests.e2e.walking import (
    LANGS,
    SHOTS,
    Reader,
    SecondBrowser,
    Walk,
    english_of_the_catalogue,
    serve_axe,
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Populated]:
    with populated_portal(tmp_path_factory.mktemp("e2e-walk")) as populated:
        serve_axe(populated.app)
        yield populated


@pytest.fixture(scope="module")
def english(site: Populated) -> frozenset[str]:
    return english_of_the_catalogue(set(site.world.users) | set(site.world.projects))


@pytest.fixture(scope="module")
def browsers(browser: Browser) -> Iterator[tuple[Browser, SecondBrowser]]:
    second = SecondBrowser()
    yield browser, second
    second.close()


@pytest.fixture(scope="module")
def walks(request: pytest.FixtureRequest) -> Iterator[list[Walk]]:
    """The walks, reported at the module's end: pages, time and where the screenshots are."""
    done: list[Walk] = []
    started = time.monotonic()
    yield done
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and done:
        reporter.write_line("")
        for walk in done:
            reporter.write_line(walk.report())
        reporter.write_line(
            f"the walk: {sum(w.pages for w in done)} pages in "
            f"{time.monotonic() - started:.0f} s; screenshots in {SHOTS}"
        )


def test_every_page_endpoint_is_walked(site: Populated) -> None:
    walked = {p.endpoint for p in (*PAGES, *ANONYMOUS)}
    assert page_endpoints(site.app) - walked - set(NOT_PAGES) == set()
    assert walked <= page_endpoints(site.app)  # and no page is walked that is gone


@pytest.mark.parametrize("who", ROLES)
def test_every_page_as_each_user_in_both_languages(
    browsers: tuple[Browser, SecondBrowser],
    site: Populated,
    english: frozenset[str],
    walks: list[Walk],
    who: str,
) -> None:
    first, second = browsers
    chinese = second.run(lambda b: Walk(b, site, Reader(who, "zh", english)).run())
    done = [Walk(first, site, Reader(who, "en", english)).run(), chinese.result()]
    walks += done
    problems = [f"{w.reader.name} {p}" for w in done for p in w.problems]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", LANGS)
def test_the_pages_before_signing_in(
    browser: Browser, site: Populated, english: frozenset[str], walks: list[Walk], lang: str
) -> None:
    walk = Walk(browser, site, Reader(NO_ONE, lang, english)).run(ANONYMOUS)
    walks.append(walk)
    assert not walk.problems, "\n".join(walk.problems)
