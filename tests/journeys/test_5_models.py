"""(e) A researcher imports a preset, evaluates it, deploys it, calls it, scales it and stops
it, through the live portal with her own token; every job runs in Slurm as her, from the job
runtime every user can run, and succeeds."""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx
from sklearn.datasets import load_digits

from tests.journeys.conftest import Site, import_preset, wait_for

log = logging.getLogger(__name__)


def _poll(api: httpx.Client, url: str, key: str, done: Any, timeout: float) -> Any:
    def check() -> Any:
        body = api.get(url).json()
        return body if done(body) else None

    return wait_for(check, timeout, f"{url}: {key}", interval=2)


def test_a_preset_imported_evaluated_served_scaled_and_stopped_as_alice(site: Site) -> None:
    alice = site.api("alice")
    model_id = import_preset(alice, "nlp")
    try:
        _journey(site, alice, model_id)
    finally:
        # the model goes once the reconciler has removed its deleted service's replicas
        wait_for(lambda: alice.delete(f"/models/{model_id}").status_code != 409, 60, "model gone")


def _journey(site: Site, alice: httpx.Client, model_id: int) -> None:

    # fine-tune the preset as a job: version 2
    r = alice.post(f"/models/{model_id}/versions/1/fine-tune", json={})
    assert r.status_code == 201, r.text
    job = site.client.job(r.json()["job_id"])
    assert job is not None
    assert (job.user, job.account) == ("alice", "nlp")  # as alice, charged to her project
    v2 = _poll(
        alice, f"/models/{model_id}/versions/2", "trained", lambda v: v["status"] != "training", 180
    )
    assert v2["status"] == "ready", v2

    r = alice.post(f"/models/{model_id}/versions/2/evaluations", json={})
    assert r.status_code == 201, r.text
    evaluations = f"/models/{model_id}/versions/2/evaluations"
    rows = _poll(alice, evaluations, "evaluated", lambda rows: rows[0]["state"] != "queued", 180)
    assert rows[0]["state"] == "succeeded", rows[0]
    version = alice.get(f"/models/{model_id}/versions/2").json()
    assert 0.9 < version["metrics"]["accuracy"] <= 1.0

    created = time.monotonic()
    r = alice.post("/inference", json={"version_id": version["id"], "allow_ips": ["127.0.0.1"]})
    assert r.status_code == 201, r.text
    svc, token = r.json(), r.json()["token"]
    url = f"/inference/{svc['id']}"
    try:
        # the request records the service; the portal's reconciler submits its replica
        def submitted() -> bool:
            return any(x["job_id"] for x in alice.get(url).json()["replica_jobs"])

        wait_for(submitted, 30, "the first replica submitted", interval=0.2)
        delay = time.monotonic() - created
        log.warning("create -> replica submitted: %.1f s", delay)
        assert delay < 10, f"the first replica was submitted {delay:.1f} s after the create"
        ready = _poll(alice, url, "one replica", lambda s: s["ready_replicas"] == 1, 180)
        assert ready["health"] == "ready"
        [replica] = ready["replica_jobs"]
        replica_job = site.client.job(replica["job_id"])
        assert replica_job is not None
        assert replica_job.user == "alice"
        digits = load_digits()
        with httpx.Client(timeout=30) as caller:  # the service token only, no portal login
            for i in range(3):
                r = caller.post(
                    f"{site.url}{svc['url']}",
                    json={"pixels": digits.data[i].tolist()},
                    headers={"X-Service-Token": token},
                )
                assert r.status_code == 200, r.text
                assert r.json()["label"] == str(digits.target[i])
        alice.patch(url, json={"replicas": 2})
        two = _poll(alice, url, "two replicas", lambda s: s["ready_replicas"] == 2, 180)
        assert {site.client.job(x["job_id"]).user for x in two["replica_jobs"]} == {"alice"}
        assert alice.post(f"{url}/stop").json()["state"] == "stopped"
        _poll(alice, url, "replicas stopped", lambda s: s["replica_jobs"] == [], 60)
    finally:
        alice.delete(url)
    events = site.api("admin").get("/audit", params={"actor": "alice"}).json()
    assert {"model.evaluate", "inference.create", "inference.update"} <= {
        e["action"] for e in events
    }
