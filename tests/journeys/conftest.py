"""The README's journeys, walked on the lab and services exactly as ``scripts/demo.sh`` leaves
them: the portal at :data:`PORTAL` with the demo's logins, its policy daemon, agents, import
and reconciler. Each journey is a demo user in headless Chromium (or the portal's HTTP API, or
their own shell with ``runuser``), never a fake: jobs run in Slurm as that Unix user.

Asked for with ``--slurm``; a lab or portal that is not running is a failure, not a skip.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from tests.e2e.conftest import browser  # noqa: F401 -- the same Chromium fixture

pytestmark = pytest.mark.slurm

#: the portal's address; unset, the one `aipool lab services up` serves (port 8080, moved by
#: ``AIPOOL_LAB_PORT_OFFSET`` like the lab's other ports)
PORTAL = os.environ.get("AIPOOL_PORTAL_URL")


@dataclass(frozen=True)
class Site:
    lab: Lab
    url: str
    passwords: dict[str, str]
    clients: dict[str, httpx.Client] = field(default_factory=dict)

    @property
    def client(self) -> SlurmClient:
        return SlurmClient(env=self.lab.cfg.env(), timeout=30)

    def api(self, user: str) -> httpx.Client:
        """The portal's API with ``user``'s own token (from their login)."""
        if user in self.clients:
            return self.clients[user]
        r = httpx.post(
            f"{self.url}/api/v1/auth/token",
            json={"username": user, "password": self.passwords[user]},
            timeout=10,
        )
        assert r.status_code in (200, 201), r.text
        headers = {"Authorization": f"Bearer {r.json()['token']}"}
        client = httpx.Client(base_url=f"{self.url}/api/v1", headers=headers, timeout=60)
        self.clients[user] = client
        return client

    def shell(self, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
        """``argv`` in ``user``'s own shell, with the lab's environment (``aipool lab env``)."""
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", **self.lab.cfg.env()}
        return subprocess.run(
            ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in env.items()), *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    lab = Lab()
    if not lab.is_up():
        pytest.fail(f"the lab at {lab.cfg.root} is not up: run `bash scripts/demo.sh`")
    running = {n for n, d in lab.status()["daemons"].items() if d["running"]}
    wanted = {"portal", "accounting-import", "reconciler"}
    if not wanted <= running:
        pytest.fail(f"the services are not running ({', '.join(sorted(wanted - running))}): "
                    "run `aipool lab services up`")  # fmt: skip
    passwords = dict(
        line.split(" ", 1) for line in (lab.cfg.etc / "demo-passwords").read_text().splitlines()
    )
    site = Site(lab, PORTAL or f"http://127.0.0.1:{lab.cfg.ports.portal}", passwords)
    yield site
    for client in site.clients.values():
        client.close()


@pytest.fixture
def as_user(browser: Browser, site: Site) -> Iterator[Callable[[str], Page]]:  # noqa: F811
    """A logged-in browser page per demo user, each in a context of its own."""
    contexts = []

    def login(user: str) -> Page:
        context = browser.new_context()
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{site.url}/login")
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", site.passwords[user])
        page.click("main button[type=submit]")  # not the header's language switcher
        page.wait_for_url(re.compile(r"^(?!.*/login).*$"))
        return page

    yield login
    for context in contexts:
        context.close()


def import_preset(api: httpx.Client, project: str, preset: str = "digits-classifier") -> int:
    """A fresh import of ``preset`` into ``project`` (one a run cut short left is deleted
    first): the new model's id."""
    project_id = next(p["id"] for p in api.get("/projects").json() if p["name"] == project)
    for left in api.get("/models").json():
        if left["name"] == preset and left.get("project_id") == project_id:
            api.delete(f"/models/{left['id']}")
    r = api.post(f"/presets/{preset}/import", json={"project_id": project_id})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def wait_for(check: Callable[[], object], timeout: float, what: str, interval: float = 1) -> object:
    """Poll ``check`` until it returns something true; fail naming ``what``. A browser error
    while polling (the page refreshing itself under a read) counts as "not yet"."""
    from playwright.sync_api import Error as BrowserError

    deadline = time.monotonic() + timeout
    last: BrowserError | None = None
    while time.monotonic() < deadline:
        try:
            if got := check():
                return got
        except BrowserError as exc:
            last = exc
        time.sleep(interval)
    raise AssertionError(f"within {timeout:g} s: {what}") from last


def job_id_of(page: Page) -> int:
    m = re.search(r"/jobs/(\d+)", page.url)
    assert m, page.url
    return int(m.group(1))


def owner_of(path: str) -> str:
    import pwd

    return pwd.getpwuid(Path(path).stat().st_uid).pw_name
