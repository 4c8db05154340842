"""(a) A student submits a 1/4-card job from the form, sees it run with its log tail and
progress, cancels it, and runs it again from the history, all in the browser as dave."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.journeys.conftest import Site, job_id_of, owner_of, wait_for

SCRIPT = """#!/bin/bash
set -euo pipefail
echo "running as $(id -un) on ${SLURMD_NODENAME}"
for i in 1 2 3 4; do echo "progress: $((i * 10))%"; sleep 1; done
sleep 600
"""


def _state(page: Page) -> str:
    page.reload()
    return page.locator("#state").get_attribute("data-state") or ""


def test_a_quarter_card_job_from_the_form_runs_as_the_student(
    site: Site, as_user: Callable[[str], Page]
) -> None:
    page = as_user("dave")
    page.goto(f"{site.url}/jobs/new")
    page.select_option("select[name=kind]", "batch")
    page.select_option("select[name=project_id]", label="cs101")
    page.fill("input[name=name]", "journey-quarter")
    page.fill("input[name=partition]", "gpu")
    page.fill("input[name=shards]", "8")  # 8 of a card's 32 shards: a quarter card
    page.fill("input[name=time_limit]", "15")
    page.fill("textarea[name=script]", SCRIPT)
    page.click("form.card button[type=submit]")
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    job_id = job_id_of(page)
    try:
        wait_for(lambda: _state(page) == "RUNNING", 90, f"job {job_id} running")
        wait_for(
            lambda: "progress: 40%" in (page.reload() and page.locator("#log").inner_text()),
            60,
            "the log tail shows the job's progress lines",
        )
        log = page.locator("#log").inner_text()
        assert "running as dave on gpu" in log  # Slurm ran it as the student, on a GPU node
        expect(page.locator("#progress")).to_contain_text("40.0")
        job = site.client.job(job_id)
        assert job is not None
        assert job.user == "dave"
        assert "gres/shard=8" in job.tres_alloc.to_string()
        assert owner_of(job.stdout_file) == "dave"  # the file as Slurm wrote it

        page.click(f"a[href='/jobs/{job_id}/cancel']")  # asks first, on a page of its own
        page.click(f"form[action='/jobs/{job_id}/cancel'] button[type=submit]")
        wait_for(lambda: _state(page) == "CANCELLED", 60, f"job {job_id} cancelled")

        page.goto(f"{site.url}/jobs/history")
        page.click(f"a:text-is('{job_id}')")
        page.click(f"form[action='/jobs/{job_id}/rerun'] button[type=submit]")
        page.wait_for_url(re.compile(r"/jobs/\d+$"))
        again = job_id_of(page)
        assert again != job_id
        wait_for(lambda: _state(page) in ("RUNNING", "PENDING"), 60, "the re-run is queued")
        rerun = site.client.job(again)
        assert rerun is not None
        assert rerun.user == "dave"
        assert rerun.name == "journey-quarter"
        site.api("dave").delete(f"/jobs/{again}")
    finally:
        site.api("dave").delete(f"/jobs/{job_id}")
