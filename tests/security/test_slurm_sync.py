"""Memberships and associations agree both ways, on the lab and its running services: drift
made with sacctmgr as root (an association the portal does not have, a member's association
removed) is repaired by the control daemon (``aipool reconcile``) on its cycle, and the audit
log says what it changed; the site's own associations (root's) are left as they are.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from slurm_plugins.client.specs import UserSpec
from tests.journeys.conftest import Site, wait_for

pytestmark = pytest.mark.slurm

#: the reconciler syncs every 60 s; a pass may be running when the drift is made
REPAIRED_WITHIN = 150


def _pairs(site: Site) -> set[tuple[str, str]]:
    return {(a.user, a.account) for a in site.client.associations() if a.user}


def _synced(site: Site, since: int) -> list[dict[str, Any]]:
    events = site.api("admin").get("/audit", params={"action": "slurm.sync"}).json()
    return [e for e in events if int(str(e["id"])) > since and e["actor"] == "system"]


def test_the_reconciler_repairs_drift_both_ways_and_reports_it(site: Site) -> None:
    before = site.api("admin").get("/audit", params={"action": "slurm.sync"}).json()
    since = max((int(str(e["id"])) for e in before), default=0)
    pairs = _pairs(site)
    assert ("dave", "cs101") in pairs  # the demo's member, in step at the start
    assert ("bob", "nlp") not in pairs
    client = site.client
    try:
        # bob gets an association the portal does not have; dave loses his
        client.ensure_users([UserSpec("bob", "nlp", ("normal",), "normal")])
        client.remove_associations(users=[("dave", "cs101")])
        assert ("bob", "nlp") in _pairs(site)
        wait_for(
            lambda: (p := _pairs(site)) and ("bob", "nlp") not in p and ("dave", "cs101") in p,
            REPAIRED_WITHIN,
            "the reconciler removed bob@nlp and gave dave back cs101",
        )
    finally:
        with contextlib.suppress(Exception):
            client.remove_associations(users=[("bob", "nlp")])
    # bob's sbatch in nlp is refused again; dave's in cs101 accepted
    refused = site.shell("bob", "sbatch", "--hold", "-A", "nlp", "-p", "cpu", "-t", "1",
                         "-o", "/dev/null", "--wrap", "true")  # fmt: skip
    assert refused.returncode != 0, refused.stdout
    ok = site.shell("dave", "sbatch", "--parsable", "--hold", "-A", "cs101", "-p", "cpu",
                    "-t", "1", "-o", "/dev/null", "--wrap", "true")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    client.cancel([int(ok.stdout.strip().split(";")[0])])
    # the audit log says what changed, in the system's name
    wait_for(lambda: _synced(site, since), 30, "the repair in the audit log")
    found = [e.get("after") or {} for e in _synced(site, since)]
    removed = {r for after in found for r in after.get("removed", [])}
    added = {r for after in found for r in after.get("added", [])}
    assert "bob@nlp" in removed
    assert "dave@cs101" in added
    assert ("root", "root") in _pairs(site)  # the site's own: untouched
