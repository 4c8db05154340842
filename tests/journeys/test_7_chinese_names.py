"""(g) alice names a job in Chinese through the API; the name survives Slurm's accounting
database (``sacct`` in her own shell), the history and the job's page, and the page of the
ended job still shows its last output line and its time limit. Names a shell, a file name
or ``squeue``'s columns could misread are refused on the way in, in both languages."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page

from slurm_plugins.client.errors import JobNotFound
from tests.journeys.conftest import Site, wait_for

NAME = "训练-四分之一"
LAST = "最后一行：完成"
SCRIPT = f"""#!/bin/bash
set -euo pipefail
echo "第一行 $(id -un)"
echo "progress: 50%"
echo "{LAST}"
"""
#: minutes: shown on the ended job's page from the accounting database
LIMIT = 7
REFUSED = ["训练 四分之一", "训练\n四分之一", "$(id)", "a/b", "训" * 65, "2024", "\u202eabc"]


def _gone_from_the_queue(site: Site, job_id: int) -> bool:
    try:
        site.client.job(job_id)
    except JobNotFound:
        return True
    return False


def test_a_job_named_in_chinese_keeps_its_name_output_and_limit(
    site: Site, as_user: Callable[[str], Page]
) -> None:
    alice = site.api("alice")
    nlp = next(p for p in alice.get("/projects").json() if p["name"] == "nlp")
    job = {"project_id": nlp["id"], "time_limit": LIMIT, "partition": "cpu", "script": SCRIPT}
    for bad in REFUSED:
        r = alice.post("/jobs", json={**job, "name": bad})
        assert r.status_code == 422, (bad, r.text)
        said = json.dumps(r.json(), ensure_ascii=False)
        assert "of any script" in said or "任意文字" in said, (bad, r.text)  # her language

    r = alice.post("/jobs", json={**job, "name": NAME})
    assert r.status_code == 201, r.text
    job_id = r.json()["job_id"]
    try:
        # ended, and gone from the controller's memory: what follows comes from sacct
        wait_for(lambda: _gone_from_the_queue(site, job_id), 180, f"job {job_id} ended")
    finally:
        alice.delete(f"/jobs/{job_id}")

    acct = site.shell(
        "alice", "sacct", "-X", "-n", "-P", "-j", str(job_id), "-o", "JobName,State,Timelimit"
    )
    assert acct.returncode == 0, acct.stderr
    name, state, limit = acct.stdout.strip().split("|")
    assert (name, state, limit) == (NAME, "COMPLETED", f"00:{LIMIT:02d}:00"), acct.stdout

    ended: dict[str, Any] = alice.get(f"/jobs/{job_id}").json()
    assert (ended["name"], ended["state"], ended["exit_code"]) == (NAME, "COMPLETED", 0)
    assert ended["time_limit_min"] == LIMIT
    history = alice.get("/jobs/history", params={"mine": "true"}).json()
    assert next(h["name"] for h in history if h["job_id"] == job_id) == NAME
    output = alice.get(f"/jobs/{job_id}/output").json()
    assert output["active"] is False
    assert output["tail"] is not None
    assert output["tail"].splitlines()[-1] == LAST
    assert "第一行 alice" in output["tail"]
    assert output["progress"] == 50.0
    # another tenant sees neither the job nor its output
    assert site.api("dave").get(f"/jobs/{job_id}/output").status_code == 404

    page = as_user("alice")
    page.goto(f"{site.url}/jobs/{job_id}")
    assert page.locator("h1 small").inner_text() == NAME
    assert page.locator("#state").get_attribute("data-state") == "COMPLETED"
    assert page.locator("#exit-code").inner_text() == "0"
    assert page.locator("#log").inner_text().splitlines()[-1] == LAST
    limit_shown = page.locator("#time-limit").inner_text()
    assert re.search(rf"\b{LIMIT}\b", limit_shown), limit_shown
    page.goto(f"{site.url}/jobs/history")
    assert page.locator(f"tr:has(a:text-is('{job_id}'))").inner_text().count(NAME) == 1
