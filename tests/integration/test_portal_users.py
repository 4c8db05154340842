"""A domain admin creates a user in their domain, against the lab: the new member's
association with the project's account is in sacctmgr at once, with no platform admin; a
project of another domain is refused and nothing reaches Slurm.

The portal and its ``pt-…`` tenants are test_portal's; the lab's Unix user ``bob`` is given a
``pt-`` association only, removed at the end with the test's accounts.
"""

from __future__ import annotations

import pytest

from slurm_plugins.client import SlurmClient
from tests.integration import test_portal as base
from tests.integration.test_portal import PROJECT, Portal

pytestmark = pytest.mark.slurm
portal = base.portal  # the fixture: test_portal's portal and its pt- tenants
NEWCOMER = "bob"  # a Unix user of the lab, a portal user of no one yet in this portal


def test_a_domain_admins_new_user_is_in_slurm_at_once(portal: Portal, client: SlurmClient) -> None:
    base._remove_test_accounts(client)
    try:
        admin = portal.api("pt-dadmin")
        refused = admin.post(
            "/api/v1/users", json={"username": NEWCOMER, "project_id": portal.ids["nlp"]}
        )
        assert refused.status_code == 404, refused.json  # research is not pt-dadmin's domain
        assert not any(a.user == NEWCOMER and a.account == PROJECT for a in client.associations())
        made = admin.post(
            "/api/v1/users", json={"username": NEWCOMER, "project_id": portal.ids["proj"]}
        )
        assert made.status_code == 201, made.json
        assert made.json["password"]  # generated, shown once
        assocs = client.associations()
        mine = next(a for a in assocs if a.user == NEWCOMER and a.account == PROJECT)
        assert mine.default_qos == "normal"
        assert set(mine.qos) == {"normal", "low"}
        events = portal.api("pt-admin").get("/api/v1/audit", query_string={"actor": "pt-dadmin"})
        actions = [e["action"] for e in events.json]
        assert {"user.create", "member.add", "slurm.sync"} <= set(actions), actions
    finally:
        base._remove_test_accounts(client)
