"""slurmrestd's data parsers: the newest both sides speak, read from the daemon's own OpenAPI
document (recorded from 22.05 and 24.11), and the 23.11+ job form (HTTP faked locally)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from slurm_plugins.client import rest as rest_module
from slurm_plugins.client.errors import AuthenticationError, CommandError, JobRequestError
from slurm_plugins.client.job import Component, Gres, JobRequest, OpenMode, Switches
from slurm_plugins.client.rest import RestClient, negotiate

KEY = b"k" * 32
DATA = Path(__file__).parents[2] / "data" / "slurm"


def _openapi(release: str) -> dict[str, Any]:
    return json.loads((DATA / release / "openapi_paths.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(("release", "parser"), [("22.05", "v0.0.38"), ("24.11", "v0.0.42")])
def test_the_newest_parser_both_sides_speak_is_chosen(release: str, parser: str) -> None:
    assert negotiate(_openapi(release)) == parser


def test_a_slurmrestd_with_no_common_parser_is_named() -> None:
    doc = {"paths": {"/slurm/v0.0.37/job/submit": ["post"], "/slurm/v0.0.37/ping": ["get"]}}
    with pytest.raises(CommandError, match=r"data parsers \['v0\.0\.37'\]; AIPool speaks"):
        negotiate(doc)


GPU_JOB = JobRequest(
    (
        Component(
            account="nlp",
            partition="gpu",
            nodes=2,
            time_limit=30,
            memory_mb=4096,
            gres=(Gres("gpu", 1, "a100"), Gres("shard", 8)),
            nodelist=("gpu1", "gpu2"),
            switches=Switches(1, 60),
        ),
    ),
    name="train",
    workdir="/home/alice",
    environment={"PATH": "/bin", "TOKEN": "s3cret"},
    requeue=False,
    open_mode=OpenMode.APPEND,
    begin="1767225600",
    kill_on_invalid_dep=True,
    mail_user="alice",
    mail_type=("END", "FAIL"),
)


def test_the_2311_form_carries_what_sbatch_would() -> None:
    body = GPU_JOB.to_rest("v0.0.42")["job"]
    assert body["environment"] == ["PATH=/bin", "TOKEN=s3cret"]
    assert body["time_limit"] == {"set": True, "infinite": False, "number": 30}
    assert body["memory_per_node"]["number"] == 4096
    assert body["tres_per_node"] == "gres/gpu:a100:1,gres/shard:8"
    assert body["required_nodes"] == ["gpu1", "gpu2"]
    assert body["required_switches"]["number"] == 1
    assert body["wait_for_switch"] == 60
    assert body["nodes"] == "2"
    assert body["requeue"] is False
    assert "no_requeue" not in body
    assert body["open_mode"] == ["APPEND"]
    assert body["begin_time"]["number"] == 1767225600
    assert body["flags"] == ["KILL_INVALID_DEPENDENCY"]
    assert body["mail_type"] == ["END", "FAIL"]
    assert "gres" not in body
    assert "nodelist" not in body


def test_a_begin_time_is_a_unix_time_or_an_iso_date() -> None:
    iso = replace(GPU_JOB, begin="2026-01-01T00:00:00+00:00").to_rest("v0.0.40")
    assert iso["job"]["begin_time"]["number"] == 1767225600
    with pytest.raises(JobRequestError, match="UNIX time or an ISO date") as refused:
        replace(GPU_JOB, begin="now+1hour").to_rest("v0.0.41")
    assert refused.value.field == "begin"


def test_the_client_negotiates_once_and_puts_the_script_in_the_job(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rest_module, "_NEGOTIATED", {})
    seen: list[tuple[str, str, Any]] = []
    openapi = _openapi("24.11")

    def handle(req: httpx.Request) -> httpx.Response:
        seen.append((req.method, req.url.path, json.loads(req.content) if req.content else None))
        if req.url.path == "/openapi/v3":
            return httpx.Response(200, json=openapi)
        return httpx.Response(200, json={"job_id": 9, "errors": [], "warnings": []})

    transport = httpx.MockTransport(handle)
    with caplog.at_level(logging.INFO, logger="aipool.slurm.rest"):
        for _ in range(2):  # a second client at the same address asks no more
            client = RestClient("http://rest.invalid", "alice", key=KEY, transport=transport)
            assert client.submit("#!/bin/bash\ntrue\n", GPU_JOB) == 9
    assert [(m, p) for m, p, _ in seen] == [
        ("GET", "/openapi/v3"),
        ("POST", "/slurm/v0.0.42/job/submit"),
        ("POST", "/slurm/v0.0.42/job/submit"),
    ]
    body = seen[1][2]
    assert set(body) == {"job"}
    assert body["job"]["script"] == "#!/bin/bash\ntrue\n"
    line = caplog.records[0].getMessage()
    assert line.startswith("run: POST /slurm/v0.0.42/job/submit as alice")
    assert "s3cret" not in line
    assert "<2 lines>" in line
    assert '"TOKEN"' in line


def test_a_heterogeneous_job_has_its_script_in_the_first_component(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rest_module, "_NEGOTIATED", {"http://rest.invalid": "v0.0.42"})
    sent: list[dict[str, Any]] = []

    def handle(req: httpx.Request) -> httpx.Response:
        sent.append(json.loads(req.content))
        return httpx.Response(200, json={"job_id": 10, "errors": []})

    het = replace(GPU_JOB, components=(Component(partition="cpu"), *GPU_JOB.components))
    client = RestClient(
        "http://rest.invalid", "alice", key=KEY, transport=httpx.MockTransport(handle)
    )
    assert client.submit("#!/bin/bash\n", het) == 10
    (body,) = sent
    assert [("script" in c) for c in body["jobs"]] == [True, False]
    assert all(c["environment"] == ["PATH=/bin", "TOKEN=s3cret"] for c in body["jobs"])


def test_a_token_slurmctld_refuses_is_an_authentication_error_on_2311() -> None:
    refused = {
        "jobs": [],
        "errors": [
            {
                "description": "Unable to query jobs",
                "error_number": 1007,
                "error": "Protocol authentication error",
                "source": "slurm_load_jobs()",
            }
        ],
    }
    transport = httpx.MockTransport(lambda _: httpx.Response(511, json=refused))
    client = RestClient(
        "http://rest.invalid", "alice", token="forged", api="v0.0.42", transport=transport
    )
    with pytest.raises(AuthenticationError, match="refused the token of 'alice'"):
        client.jobs()
