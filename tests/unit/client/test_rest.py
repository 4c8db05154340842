"""slurmrestd client: tokens Slurm accepts, headers, and error mapping (HTTP faked locally)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import jwt
import pytest

from slurm_plugins.client.errors import AuthenticationError, SubmitRejected
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
    return RestClient("http://rest.invalid", "alice", key=KEY, transport=handler)


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
        _client(httpx.MockTransport(handle)).submit("#!/bin/bash\ntrue\n", {"account": "x"})
