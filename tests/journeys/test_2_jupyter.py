"""(b) A student starts Jupyter from the form, clicks Connect, and JupyterLab loads through
the portal (no route to the node needed); another user following the same link is refused."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Page

from tests.journeys.conftest import Site, job_id_of, wait_for


def test_jupyterlab_through_the_portal_for_its_owner_only(
    site: Site, as_user: Callable[[str], Page]
) -> None:
    page = as_user("dave")
    page.goto(f"{site.url}/jobs/new")
    page.select_option("select[name=kind]", "jupyter")
    page.select_option("select[name=project_id]", label="cs101")
    page.fill("input[name=name]", "journey-notebook")
    page.fill("input[name=partition]", "cpu")
    page.fill("input[name=cpus]", "1")
    page.fill("input[name=time_limit]", "15")
    page.fill("textarea[name=script]", "")
    page.click("form.card button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    job_id = job_id_of(page)
    try:

        def connect_link() -> bool:
            page.reload()
            return page.locator("#jupyter a:has-text('Connect')").count() == 1

        wait_for(connect_link, 120, f"job {job_id}'s Connect link")
        link = page.locator("#jupyter a").get_attribute("href")
        assert link == f"/jupyter/{job_id}/lab"
        with page.context.expect_page() as opened:
            page.click("#jupyter a")
        lab = opened.value
        lab.wait_for_load_state()
        wait_for(lambda: "JupyterLab" in lab.title(), 60, "JupyterLab's page")
        assert lab.url.startswith(f"{site.url}/jupyter/{job_id}/")  # through the portal
        status = lab.request.get(f"{site.url}/jupyter/{job_id}/api/status")
        assert status.ok, status.text()
        # others with the same link are refused by the portal; nothing reaches the server:
        # the course's manager sees the job but not into it, a stranger not even the job
        for who, status in (("carol", 403), ("alice", 404)):
            refused = as_user(who).goto(f"{site.url}/jupyter/{job_id}/lab")
            assert refused is not None
            assert refused.status == status, who
            assert "JupyterLab" not in refused.text()
        job = site.client.job(job_id)
        assert job is not None
        assert job.user == "dave"
    finally:
        site.api("dave").delete(f"/jobs/{job_id}")
