"""Every error the portal answers in JSON is one envelope: ``code`` (the status), ``status``
(its phrase), ``error`` (a code a program tests) and ``message`` (a sentence), plus
``errors`` where fields were wrong; whatever raised it (a service's domain error, routing,
webargs, CSRF, the limiter, an unexpected exception, a missing login) and wherever (the API,
the Jupyter proxy, its WebSockets). Pages get an error page instead."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import pytest

from portal import asgi
from portal.errors import Forbidden, SlurmUnavailable
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login

API = "/api/v1"
PLAN = {"name": "lab", "currency": "CNY", "prices": [{"resource": "gpu", "rate": "8.00"}]}


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: Any
    headers: dict[str, str]


Call = Callable[[Env, pytest.MonkeyPatch], Answer]


def http(response: Any) -> Answer:
    body = response.get_json(silent=True)
    return Answer(response.status_code, response.mimetype, body, dict(response.headers))


def _socket_refusal(env: Env, mp: pytest.MonkeyPatch) -> Answer:
    """A kernel WebSocket refused before the handshake (portal.asgi answers over HTTP)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(asgi._refuse(send, Forbidden("a WebSocket must come from the portal's pages")))
    start, body = sent
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], headers["content-type"], json.loads(body["body"]), headers)


def _unexpected(env: Env, mp: pytest.MonkeyPatch) -> Answer:
    from portal.roles import service

    def broken() -> None:
        raise RuntimeError("a bug")

    mp.setitem(env.app.config, "PROPAGATE_EXCEPTIONS", False)
    mp.setattr(service, "roles_query", broken)
    return http(env.api("alice").get(f"{API}/roles"))


def _too_many_sign_ins(env: Env, mp: pytest.MonkeyPatch) -> Answer:
    mp.setitem(env.app.config, "LOGIN_RATE_LIMIT", "1 per minute")
    client = env.app.test_client()
    body = {"username": "alice", "password": "wrong password", "name": "cli"}
    client.post(f"{API}/auth/token", json=body)
    return http(client.post(f"{API}/auth/token", json=body))


def _slurm_down(env: Env, mp: pytest.MonkeyPatch) -> Answer:
    def down() -> None:
        raise SlurmUnavailable("slurmctld does not answer")

    mp.setattr(env.slurm, "nodes", down)
    return http(env.api("alice").get(f"{API}/nodes"))


def _over_the_domain(env: Env, mp: pytest.MonkeyPatch) -> Answer:
    env.api("erin").put(f"{API}/projects/{env.world.projects['nlp']}/quota", json={"gpus": 4})
    research = env.world.domains["research"]
    return http(env.api("admin").put(f"{API}/domains/{research}/quota", json={"gpus": 1}))


def _jupyter(accept: str, who: str | None, owner: str = "bob") -> Call:
    def call(env: Env, mp: pytest.MonkeyPatch) -> Answer:
        job = env.slurm.add_job(owner, "vision" if owner == "bob" else "nlp")
        client = login(env, who) if who else env.app.test_client()
        return http(client.get(f"/jupyter/{job}/api/status", headers={"Accept": accept}))

    return call


CASES: dict[str, tuple[Call, int, str]] = {
    "no login": (lambda e, _: http(e.app.test_client().get(f"{API}/jobs")), 401, "unauthorized"),
    "a bad token": (
        lambda e, _: http(
            e.app.test_client().get(f"{API}/jobs", headers={"Authorization": "Bearer nope"})
        ),
        401,
        "unauthorized",
    ),
    "no CSRF token": (
        lambda e, _: http(login(e, "alice").post(f"{API}/datasets", json={"name": "x"})),
        400,
        "bad_request",
    ),
    "not allowed": (
        lambda e, _: http(
            e.api("alice").post(f"{API}/roles", json={"name": "r", "permissions": []})
        ),
        403,
        "forbidden",
    ),
    "another tenant's object": (
        lambda e, _: http(e.api("alice").get(f"{API}/projects/{e.world.projects['vision']}")),
        404,
        "not_found",
    ),
    "no such address": (
        lambda e, _: http(e.api("alice").get(f"{API}/no-such-thing")),
        404,
        "not_found",
    ),
    "a method the address has not": (
        lambda e, _: http(e.api("alice").delete(f"{API}/auth/me")),
        405,
        "method_not_allowed",
    ),
    "a conflict": (
        lambda e, _: http(
            e.api("admin").post(
                f"{API}/roles", json={"name": "viewer", "permissions": ["project.read"]}
            )
        ),
        409,
        "conflict",
    ),
    "over a quota": (_over_the_domain, 409, "quota_exceeded"),
    "a stale ETag": (
        lambda e, _: http(
            e.api("erin").put(
                f"{API}/projects/{e.world.projects['nlp']}/quota",
                json={"gpus": 1},
                headers={"If-Match": '"not-the-current-one"'},
            )
        ),
        412,
        "precondition_failed",
    ),
    "a body over the limit": (
        lambda e, mp: (
            mp.setitem(e.app.config, "MAX_CONTENT_LENGTH", 1024),
            http(e.api("alice").post(f"{API}/datasets", json={"name": "x" * 2048})),
        )[1],
        413,
        "request_entity_too_large",
    ),
    "input the schema refuses": (
        lambda e, _: http(e.api("admin").post(f"{API}/roles", json={})),
        422,
        "unprocessable_entity",
    ),
    "input a service refuses": (
        lambda e, _: http(e.api("admin").put(f"{API}/usage/billing/plans/other", json=PLAN)),
        422,
        "validation_failed",
    ),
    "too many sign-ins": (_too_many_sign_ins, 429, "too_many_requests"),
    "an unexpected exception": (_unexpected, 500, "internal_server_error"),
    "Slurm down": (_slurm_down, 503, "slurm_unavailable"),
    "a Jupyter call without a login": (_jupyter("application/json", None), 401, "unauthorized"),
    "a Jupyter call to another's job": (_jupyter("*/*", "alice"), 404, "not_found"),
    "a Jupyter call to a job without Jupyter": (_jupyter("*/*", "alice", "alice"), 409, "conflict"),
    "a Jupyter WebSocket refused": (_socket_refusal, 403, "forbidden"),
}


RFC_7231 = {413: "Request Entity Too Large", 422: "Unprocessable Entity"}


@pytest.mark.parametrize("kind", list(CASES))
def test_every_error_is_the_one_envelope(
    env: Env, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    call, status, error = CASES[kind]
    answer = call(env, monkeypatch)
    assert answer.status == status, answer.body
    assert answer.content_type == "application/json"
    body = answer.body
    assert set(body) - {"errors"} == {"code", "status", "error", "message"}, body
    assert body["code"] == status
    # the phrase RFC 7231 gives, on every Python (3.13 renamed 413 and 422's)
    assert body["status"] == RFC_7231.get(status, HTTPStatus(status).phrase)
    assert body["error"] == error
    assert isinstance(body["message"], str)
    assert body["message"].strip(), body
    if status == 422:
        assert body["errors"], body  # which fields, and what is wrong with each
    if status == 405:
        assert "DELETE" not in answer.headers["Allow"]
    if status == 429:
        assert int(answer.headers["Retry-After"]) > 0


def test_pages_and_browsers_get_an_error_page(env: Env) -> None:
    alice = login(env, "alice")
    r = alice.get(f"/projects/{env.world.projects['vision']}")
    assert r.status_code == 404
    assert r.mimetype == "text/html"
    job = env.slurm.add_job("bob", "vision")
    navigation = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    r = alice.get(f"/jupyter/{job}/lab", headers={"Accept": navigation})
    assert r.status_code == 404
    assert r.mimetype == "text/html"
    r = env.app.test_client().get(f"/jupyter/{job}/lab", headers={"Accept": navigation})
    assert r.status_code == 302  # to the sign-in page
    assert "/login" in r.headers["Location"]
