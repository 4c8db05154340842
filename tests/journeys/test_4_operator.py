"""(d) The platform admin sees the usage of jobs just run with no manual import (the
scheduled import runs every few minutes) and downloads it as CSV, XLSX and PDF. (g) The
audit log shows the job's submission."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from playwright.sync_api import Page

from aipool.lab.services import IMPORT_MINUTES
from tests.journeys.conftest import Site, wait_for


def test_usage_of_a_job_just_run_shows_up_by_itself(
    site: Site, as_user: Callable[[str], Page]
) -> None:
    bob = site.api("bob")
    vision = next(p for p in bob.get("/projects").json() if p["name"] == "vision")
    r = bob.post(
        "/jobs",
        json={"project_id": vision["id"], "name": "journey-usage", "time_limit": 5, "shards": 4,
              "partition": "gpu", "script": "#!/bin/bash\nid -un\nsleep 5\n"},
    )  # fmt: skip
    assert r.status_code == 201, r.text
    job_id = r.json()["job_id"]
    wait_for(
        lambda: (j := site.client.job(job_id)) is None or not j.state.is_active,
        120,
        f"job {job_id} done",
    )
    month = datetime.now(UTC).strftime("%Y-%m")
    admin = site.api("admin")

    def bobs_jobs() -> int:
        lines = admin.get("/usage", params={"month": month, "by": "user"}).json()["lines"]
        return next((int(ln["jobs"]) for ln in lines if ln["key"] == "bob"), 0)

    # nobody imports by hand: the scheduled import picks it up within its interval
    wait_for(bobs_jobs, IMPORT_MINUTES * 60 + 90, "bob's job in the usage report", interval=5)

    page = as_user("admin")
    page.goto(f"{site.url}/usage?month={month}&by=user")
    assert "Last import" in page.locator("#last-import").inner_text()
    assert page.locator(".usage-table th:text-is('bob')").count() == 1
    # CSV in UTF-8 with a byte order mark (for Excel), headed in the reader's words
    magic = {"csv": b"\xef\xbb\xbfUser,", "xlsx": b"PK", "pdf": b"%PDF"}
    for fmt, start in magic.items():
        with page.expect_download() as got:
            page.click(f"a:text-is('{fmt.upper()}')")
        data = got.value.path().read_bytes()
        assert data.startswith(start), (fmt, data[:20])

    events = admin.get("/audit", params={"action": "job.submit", "actor": "bob"}).json()
    assert any(e["target_id"] == str(job_id) for e in events)
