"""Walking the portal's pages in Chromium and checking each: a screenshot for a person,
axe-core's serious and critical violations, overflow at phone width, what the page says (the
reader's language, no Slurm code outside its <code>, no "None", nothing of another tenant),
and script errors. Used by the walk of every page and by the tests of single forms."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from axe_playwright_python.base import AXE_FILE_PATH
from babel.messages.pofile import read_po
from flask import Flask
from playwright.sync_api import Browser, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page as Tab
from werkzeug.middleware.shared_data import SharedDataMiddleware

from portal.jobs.reasons import REASONS
from slurm_plugins.client.models import JobState, NodeState
from tests.e2e.conftest import CHROMIUM, LAUNCH_ARGS
from tests.e2e.pages import PAGES, Page
from tests.e2e.populated import Populated
from tests.unit.portal.world import PASSWORD
from translations import DIRECTORY

T = TypeVar("T")
SHOTS = Path(__file__).resolve().parents[2] / "out" / "screenshots"  # <lang>/<user>/<page>.png
LANGS = {"zh": "zh-CN", "en": "en-US"}
HTML_LANG = {"zh": "zh-CN", "en": "en"}
#: the actions in tables' rows (their last cells) that are out of sight without scrolling
ACTIONS_OFF_SCREEN = """() => {
  const out = [];
  document.querySelectorAll("main table td:last-child").forEach((cell) => {
    cell.querySelectorAll("button, a.button, summary").forEach((a) => {
      const folded = a.closest("details:not([open])");  // a closed question's own button
      if (folded && a.parentElement !== folded) return;
      const r = a.getBoundingClientRect();
      if (r.width && (r.right > innerWidth + 1 || r.left < -1)) out.push(a.textContent.trim());
    });
  });
  return out;
}"""
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
#: a user of another tenant: their own pages look like a member's; the walk checks that nlp's
#: stay closed and that theirs name nothing of nlp, at desktop width
OTHER_TENANT = "dave"
ANONYMOUS = "anonymous"  # no one signed in
AXE_URL = "/__axe__/axe.min.js"  # served beside the portal: cached, compiled once per browser
SERIOUS = ("serious", "critical")
#: at phone width only what the width changes: colours of what shows, wide tables that scroll,
#: and the controls shown at that width (the menu button)
PHONE_RULES = ["color-contrast", "scrollable-region-focusable", "label", "button-name",
               "link-name", "region", "landmark-one-main"]  # fmt: skip
#: Slurm's codes that are no English word: shown raw, they are untranslated
CODES = {s.value for s in (*JobState, *NodeState)} | {
    code for code in REASONS if re.search(r"[a-z][A-Z]", code)
}
#: Python's None printed for a value: alone, or after a label
NONE = re.compile(r"^None$|\w[ :]+None\b")
#: what a page shows a reader, one string each: text (outside code, pre and the like) and the
#: attributes people read
TEXTS = """() => {
  const skip = new Set(["SCRIPT", "STYLE", "CODE", "PRE", "TEXTAREA", "NOSCRIPT", "KBD",
                        "SAMP"]);
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    let e = n.parentElement, hidden = false;
    for (; e; e = e.parentElement) { if (skip.has(e.tagName)) { hidden = true; break; } }
    const t = n.textContent.replace(/\\s+/g, " ").trim();
    if (t && !hidden) out.push(t);
  }
  for (const a of ["title", "placeholder", "alt", "aria-label"]) {
    document.querySelectorAll("body [" + a + "]").forEach(e => out.push(e.getAttribute(a)));
  }
  return out;
}"""
#: nlp's names, which a user of another tenant never reads
# the project is "nlp" as written (a hub name such as Helsinki-NLP is no tenant's); people's
# names in any case
NLP_MARKS = re.compile(r"(?-i:\bnlp\b|\bnlp-)|\balice\b|\bmia\b", re.I)


def serve_axe(app: Flask) -> None:
    """axe-core (shipped by axe-playwright-python) at :data:`AXE_URL` beside the app."""
    app.wsgi_app = SharedDataMiddleware(app.wsgi_app, {AXE_URL: str(AXE_FILE_PATH)})  # type: ignore[method-assign]


def english_of_the_catalogue(names: set[str]) -> frozenset[str]:
    """The catalogue's English that reads otherwise in Chinese, whole texts without values,
    less what is also a name of the world (a user called admin)."""
    with (DIRECTORY / "zh_Hans_CN" / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalogue = read_po(f)
    return frozenset(
        m.id
        for m in catalogue
        if isinstance(m.id, str)
        and m.string
        and m.string != m.id
        and "%(" not in m.id
        and re.search(r"[a-z]{3}", m.id)
        and m.id not in names
    )


def screenshot(tab: Tab, path: Path) -> None:
    """A full-page screenshot, tried once more when Chromium could not capture it: under a
    busy host its compositor sometimes answers "Unable to capture screenshot" for a page that
    draws fine. Any other error, or a second refusal, fails as before."""
    try:
        tab.screenshot(path=str(path), full_page=True)
    except PlaywrightError as exc:
        if "Unable to capture screenshot" not in str(exc):
            raise
        tab.wait_for_timeout(500)
        tab.screenshot(path=str(path), full_page=True)


def axe_violations(tab: Tab, rules: list[str] | None = None) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each."""
    tab.add_script_tag(url=AXE_URL)
    options: dict[str, Any] = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": rules}
    result: dict[str, Any] = tab.evaluate("options => axe.run(document, options)", options)
    return [
        f"axe {v['impact']} {v['id']}: {v['help']} at "
        + "; ".join(", ".join(n["target"]) for n in v["nodes"][:4])
        for v in result["violations"]
        if v["impact"] in SERIOUS
    ]


@dataclass(frozen=True)
class Reader:
    """Who walks, in which language, and the catalogue's English to look for on the pages."""

    who: str
    lang: str
    english: frozenset[str]

    @property
    def name(self) -> str:
        return f"{self.who}/{self.lang}"


@dataclass
class Walk:
    """One reader's walk in one browser context: what it found, and where the time went."""

    browser: Browser
    site: Populated
    reader: Reader
    problems: list[str] = field(default_factory=list)
    pages: int = 0
    steps: Counter[str] = field(default_factory=Counter)

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.steps[step] += time.monotonic() - started

    def open(self) -> Tab:
        context = self.browser.new_context(
            locale=LANGS[self.reader.lang],
            viewport=WIDTHS["desktop"],  # type: ignore[arg-type]
        )
        tab = context.new_page()
        tab.set_default_timeout(20_000)
        if self.reader.who != ANONYMOUS:
            tab.goto(f"{self.site.url}/login")
            tab.fill("input[name=username]", self.reader.who)
            tab.fill("input[name=password]", PASSWORD)
            tab.click("main button[type=submit]")
            tab.wait_for_url(f"{self.site.url}/")
        return tab

    def visit(self, tab: Tab, page: Page, ready: bool = True) -> tuple[int, list[str]]:
        """Open the page; its status and the script errors it raised while loading."""
        errors: list[str] = []

        def failed(error: Exception) -> None:
            errors.append(f"script error: {error}")

        tab.on("pageerror", failed)
        with self.timed("open"):
            response = tab.goto(self.site.url + page.url(self.site))
            assert response is not None
            if ready and page.ready and response.status == 200:  # drawn after the load
                tab.wait_for_selector(page.ready, state="attached")
        tab.remove_listener("pageerror", failed)
        return response.status, errors

    def check(self, tab: Tab, name: str, width: str) -> list[str]:
        """Screenshot, accessibility and, at phone width, overflow."""
        shot = SHOTS / self.reader.lang / self.reader.who / f"{name}-{width}.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        with self.timed("screenshot"):
            screenshot(tab, shot)
        with self.timed("axe"):
            found = axe_violations(tab, PHONE_RULES if width == "phone" else None)
        if width == "phone":  # wide tables scroll inside themselves, the page does not
            scroll = tab.evaluate("document.documentElement.scrollWidth")
            if scroll > WIDTHS["phone"]["width"]:
                found.append(f"{scroll} px wide at phone width")
            found += [f"the action {a!r} is off-screen" for a in tab.evaluate(ACTIONS_OFF_SCREEN)]
        return found

    def read(self, tab: Tab) -> list[str]:
        """What is wrong with what the page says."""
        found: list[str] = []
        html_lang = tab.get_attribute("html", "lang")
        if html_lang != HTML_LANG[self.reader.lang]:
            found.append(f'<html lang="{html_lang}">')
        if (h1 := tab.locator("h1").count()) != 1:
            found.append(f"{h1} <h1>")
        with self.timed("read"):
            texts: list[str] = tab.evaluate(TEXTS)
        for text in dict.fromkeys(texts):
            if NONE.search(text):
                found.append(f"None shown: {text!r}")
            if raw := CODES & set(re.findall(r"[A-Za-z_]+", text)):
                found.append(f"Slurm's code {sorted(raw)} outside <code>: {text!r}")
            if self.reader.lang == "zh" and text in self.reader.english:
                found.append(f"English: {text!r}")
            if self.reader.who == OTHER_TENANT and NLP_MARKS.search(text):
                found.append(f"nlp's data shown to another tenant: {text!r}")
        return found

    def page(self, tab: Tab, page: Page, width: str) -> list[str]:
        status, found = self.visit(tab, page)
        if status != 200:
            return [*found, f"{status}"]
        self.pages += 1
        found += self.check(tab, page.name, width)
        if width == "desktop":  # the words do not change with the width
            found += self.read(tab)
        return found

    def run(self, pages: tuple[Page, ...] = PAGES) -> Walk:
        """Every page the reader opens, at each width; the others refused (the refusal's page
        checked once per width)."""
        tab = self.open()
        who = self.reader.who
        for width in ["desktop"] if who == OTHER_TENANT else list(WIDTHS):
            tab.set_viewport_size(WIDTHS[width])  # type: ignore[arg-type]
            refused = False
            for page in pages:
                if who in page.who or who == ANONYMOUS:
                    found = self.page(tab, page, width)
                else:
                    status, found = self.visit(tab, page, ready=False)
                    if status not in (403, 404):
                        found.append(f"{status}, not 403 or 404")
                    elif not refused:
                        refused = True
                        found += self.check(tab, "refused", width)
                self.problems += [f"{page.name} ({width}): {p}" for p in found]
        tab.context.close()
        return self

    def report(self) -> str:
        total = sum(self.steps.values())
        steps = ", ".join(f"{k} {v:.0f} s" for k, v in self.steps.most_common())
        return f"{self.reader.name}: {self.pages} pages, {total:.0f} s ({steps})"


class SecondBrowser:
    """A Chromium driven from a thread of its own (Playwright's sync API is one per thread),
    so that two walks run at the same time."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="second-browser")
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._pool.submit(self._start).result()

    def _start(self) -> None:
        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)

    def _stop(self) -> None:
        assert self._browser is not None
        assert self._pw is not None
        self._browser.close()
        self._pw.stop()

    def run(self, fn: Callable[[Browser], T]) -> Future[T]:
        """``fn(browser)`` on the second browser's thread."""
        return self._pool.submit(lambda: fn(self._browser))  # type: ignore[arg-type]

    def close(self) -> None:
        self._pool.submit(self._stop).result()
        self._pool.shutdown()
