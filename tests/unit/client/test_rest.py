"""slurmrestd client: tokens Slurm accepts, headers, and error mapping (HTTP faked locally)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from slurm_plugins.client.errors import AuthenticationError, JobRequestError, SubmitRejected
from slurm_plugins.client.job import Component, Gres, JobRequest
from slurm_plugins.client.rest import RestClient, mint_token

KEY = b"k" * 32
DATA = Path(__file__).parents[2] / "data" / "slurm" / "24.11"


def test_token_carries_slurm_user_and_expiry() -> None:
    token = mint_token(KEY, "alice", lifespan=60, now=1_000_000)
    claims = jwt.decode(token, KEY, algorithms=["HS256"], options={"verify_exp": False})
    assert claims == {"iat": 1_000_000, "exp": 1_000_060, "sun": "alice"}


@pytest.mark.parametrize("user", ["", "a b", "x\ny"])
def test_token_refuses_odd_user_names(user: str) -> None:
    with pytest.raises(ValueError, match="invalid user name"):
        mint_token(KEY, user)


def _client(handler: httpx.MockTransport) -> RestClient:
    return RestClient("http://rest.invalid", "alice", key=KEY, api="v0.0.38", transport=handler)


def test_requests_are_made_as_the_user() -> None:
    seen: list[httpx.Request] = []

    def handle(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, text=(DATA / "squeue.json").read_text())

    jobs = _client(httpx.MockTransport(handle)).jobs()
    assert jobs
    assert seen[0].url.path == "/slurm/v0.0.38/jobs"
    assert seen[0].headers["X-SLURM-USER-NAME"] == "alice"
    claims = jwt.decode(seen[0].headers["X-SLURM-USER-TOKEN"], KEY, algorithms=["HS256"])
    assert claims["sun"] == "alice"


def test_bad_token_is_an_authentication_error() -> None:
    transport = httpx.MockTransport(lambda _: httpx.Response(401, text="Authentication failure"))
    with pytest.raises(AuthenticationError, match="refused the credentials"):
        _client(transport).ping()


def test_rejected_submission_keeps_slurms_message() -> None:
    body = {"errors": [{"error_number": 2072, "error": "Invalid account"}], "job_id": None}

    def handle(req: httpx.Request) -> httpx.Response:
        sent = json.loads(req.content)
        assert sent["script"].startswith("#!/bin/bash")
        assert sent["job"]["environment"]
        return httpx.Response(500, json=body)

    with pytest.raises(SubmitRejected, match="Invalid account"):
        _client(httpx.MockTransport(handle)).submit("#!/bin/bash\ntrue\n", job(account="x"))


def job(**component: Any) -> JobRequest:
    return JobRequest((Component(**component),), name="t", environment={"PATH": "/bin"})


PS_WORKER = JobRequest(
    (
        Component(account="vision", partition="cpu", nodes=1, tasks_per_node=1),
        Component(account="vision", partition="gpu", nodes=2, gres=(Gres("gpu", 1),)),
    ),
    name="tf-ps",
    workdir="/home/bob",
    environment={"PATH": "/bin", "TOKEN": "s3cret"},
    labels={"name": "tf-ps", "topology": "ps_worker"},
)


def test_a_heterogeneous_job_is_sent_as_the_list_of_its_components(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[dict[str, Any]] = []

    def handle(req: httpx.Request) -> httpx.Response:
        sent.append(json.loads(req.content))
        return httpx.Response(200, json={"job_id": 41, "errors": []})

    with caplog.at_level(logging.INFO, logger="aipool.slurm.rest"):
        assert _client(httpx.MockTransport(handle)).submit("#!/bin/bash\ntrue\n", PS_WORKER) == 41
    (body,) = sent
    assert body == {"script": "#!/bin/bash\ntrue\n", **PS_WORKER.to_rest()}
    assert [p["partition"] for p in body["jobs"]] == ["cpu", "gpu"]
    assert all(p["environment"] == {"PATH": "/bin", "TOKEN": "s3cret"} for p in body["jobs"])
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("run: POST /slurm/v0.0.38/job/submit as alice {")
    assert '"partition": "gpu"' in line
    assert "<2 lines>" in line
    assert "s3cret" not in line
    assert "TOKEN" in line


def test_dry_run_sends_nothing_and_says_what_it_would_send(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def handle(req: httpx.Request) -> httpx.Response:
        raise AssertionError(f"sent {req.method} {req.url}")

    rest = RestClient(
        "http://rest.invalid",
        "alice",
        key=KEY,
        api="v0.0.38",
        transport=httpx.MockTransport(handle),
        dry_run=True,
    )
    with caplog.at_level(logging.INFO, logger="aipool.slurm.rest"):
        assert rest.submit("#!/bin/bash\n", PS_WORKER) == 0
        rest.cancel(41)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("dry-run: POST /slurm/v0.0.38/job/submit as alice")
    assert lines[1] == "dry-run: DELETE /slurm/v0.0.38/job/41 as alice"


def test_a_job_held_as_asked_is_accepted_not_an_error() -> None:
    held = {"job_id": 7, "errors": [{"error_code": 2042, "error": "Job is in held state"}]}
    transport = httpx.MockTransport(lambda _: httpx.Response(200, json=held))
    assert _client(transport).submit("#!/bin/bash\n", replace(job(), hold=True)) == 7


def test_a_field_the_version_cannot_carry_is_refused_before_sending() -> None:
    def handle(req: httpx.Request) -> httpx.Response:
        raise AssertionError("nothing may be sent")

    with pytest.raises(JobRequestError, match="environment") as refused:
        _client(httpx.MockTransport(handle)).submit(
            "#!/bin/bash\n", replace(job(), environment=None)
        )
    assert refused.value.field == "environment"
    with pytest.raises(ValueError, match=r"v0\.0\.99 is not supported"):
        RestClient(
            "http://rest.invalid",
            "alice",
            key=KEY,
            api="v0.0.99",
            transport=httpx.MockTransport(handle),
        ).submit("#!/bin/bash\n", job())
