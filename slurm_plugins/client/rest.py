"""slurmrestd client that acts as one given user, with a JWT minted from the cluster key.

The portal uses this so every job is submitted *as its user* — never all jobs under one
service account. Responses go through the same :mod:`parse` module as the CLI client; writes
are logged and honour ``dry_run``, as the CLI client's are.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import jwt

from slurm_plugins.client import parse
from slurm_plugins.client.errors import (
    AuthenticationError,
    CommandError,
    ControllerUnavailable,
    JobNotFound,
    ParseError,
    SubmitRejected,
)
from slurm_plugins.client.job import JobRequest
from slurm_plugins.client.job_wire import REST_FORMS
from slurm_plugins.client.models import Job, Node

log = logging.getLogger("aipool.slurm.rest")
#: ESLURM_JOB_HELD: slurmrestd lists it among the errors of a job it accepted held, as asked.
_JOB_HELD = 2042
#: SLURM_PROTOCOL_AUTHENTICATION_ERROR: how 23.11+ reports a token slurmctld refused (HTTP 511)
_AUTHENTICATION = 1007


def mint_token(key: bytes, user: str, *, lifespan: int = 600, now: float | None = None) -> str:
    """An HS256 token in the form Slurm's auth/jwt expects (``sun`` = Slurm user name)."""
    if not user or not user.isprintable() or any(c.isspace() for c in user):
        raise ValueError(f"invalid user name for a token: {user!r}")
    issued = int(time.time() if now is None else now)
    claims = {"iat": issued, "exp": issued + lifespan, "sun": user}
    return jwt.encode(claims, key, algorithm="HS256")


def read_key(path: Path) -> bytes:
    """The cluster's JWT key (``AuthAltParameters=jwt_key=…``); readable only by its owner."""
    return path.read_bytes()


class RestClient:
    """Talks to slurmrestd as ``user``.

    Either pass ``token`` or ``key`` (raw bytes of the cluster's jwt key) to mint one.
    """

    def __init__(
        self,
        base_url: str,
        user: str,
        *,
        token: str | None = None,
        key: bytes | None = None,
        api: str | None = None,
        timeout: float = 15.0,
        transport: httpx.BaseTransport | None = None,
        dry_run: bool = False,
    ) -> None:
        if token is None:
            if key is None:
                raise ValueError("RestClient needs a token or the key to mint one")
            token = mint_token(key, user)
        self.user = user
        self._api = api
        self.dry_run = dry_run
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            transport=transport,
            headers={
                "X-SLURM-USER-NAME": user,
                "X-SLURM-USER-TOKEN": token,
                "Accept": "application/json",
            },
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def api(self) -> str:
        """The data parser this client speaks: the one it was given, or the newest that both
        this slurmrestd (its OpenAPI document, read once per process and address) and AIPool
        speak."""
        if self._api is None:
            base = str(self._http.base_url)
            if base not in _NEGOTIATED:
                _NEGOTIATED[base] = negotiate(self._openapi())
            self._api = _NEGOTIATED[base]
        return self._api

    def _openapi(self) -> Mapping[str, Any]:
        url = "/openapi/v3"
        try:
            resp = self._http.get(url)
        except httpx.TransportError as exc:
            raise ControllerUnavailable(
                f"slurmrestd unreachable: {exc}", argv=("GET", url)
            ) from exc
        if resp.status_code in (401, 403):
            raise AuthenticationError(
                f"slurmrestd refused the credentials of {self.user!r} ({resp.status_code})",
                argv=("GET", url),
                returncode=resp.status_code,
            )
        try:
            doc = resp.json()
        except ValueError as exc:
            raise ParseError(
                f"slurmrestd's OpenAPI document is not JSON ({resp.status_code})", argv=("GET", url)
            ) from exc
        if resp.status_code >= 400 or not isinstance(doc, Mapping):
            raise CommandError(f"slurmrestd's OpenAPI document: HTTP {resp.status_code}")
        return doc

    # ------------------------------------------------------------------ plumbing
    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        url = f"/slurm/{self.api}{path}"
        try:
            resp = self._http.request(method, url, json=body)
        except httpx.TransportError as exc:
            raise ControllerUnavailable(
                f"slurmrestd unreachable: {exc}", argv=(method, url)
            ) from exc
        if resp.status_code in (401, 403):
            raise AuthenticationError(
                f"slurmrestd refused the credentials of {self.user!r} ({resp.status_code})",
                argv=(method, url),
                returncode=resp.status_code,
                stderr=resp.text[:500],
            )
        try:
            doc = resp.json()
        except ValueError as exc:
            raise ParseError(
                f"slurmrestd answered {resp.status_code} with non-JSON: {resp.text[:200]!r}",
                argv=(method, url),
            ) from exc
        errors = [e for e in doc.get("errors") or [] if _real_error(e)]
        refused = resp.status_code == 511 or any(
            parse.num(e.get("error_number")) == _AUTHENTICATION for e in errors
        )
        if refused or (
            errors and all(_unspecified(e) for e in errors) and self._token_refused(path)
        ):
            raise AuthenticationError(
                f"slurmctld refused the token of {self.user!r} (bad, forged or expired JWT)",
                argv=(method, url),
                returncode=resp.status_code,
                stderr=resp.text[:500],
            )
        if resp.status_code >= 400 or errors:
            message = "; ".join(_error_text(e) for e in errors) or f"HTTP {resp.status_code}"
            kwargs: dict[str, Any] = {
                "argv": (method, url),
                "returncode": resp.status_code,
                "stderr": resp.text[:500],
            }
            if "Invalid job id" in message or "Unable to query JobId" in message:
                raise JobNotFound(path.rsplit("/", 1)[-1], **kwargs)
            if path == "/job/submit":
                raise SubmitRejected(message, **kwargs)
            raise CommandError(message, **kwargs)
        return doc

    def _write(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """A state-changing call, or only its log line under ``dry_run`` (then ``None``)."""
        shown = f"{method} /slurm/{self.api}{path} as {self.user}"
        if body is not None:
            shown += f" {_loggable(body)}"
        if self.dry_run:
            log.info("dry-run: %s", shown)
            return None
        log.info("run: %s", shown)
        return self._call(method, path, body)

    def _token_refused(self, path: str) -> bool:
        """Slurm 22.05 passes the JWT through to slurmctld, which rejects a bad one with a
        bare "Unspecified error" (errno -1). Tell that apart from a real failure by asking
        ``/ping``, which only fails that way when the credentials are refused."""
        if path == "/ping":
            return True
        try:
            probe = self._http.get(f"/slurm/{self.api}/ping").json()
        except (httpx.HTTPError, ValueError):
            return False
        errors = [e for e in probe.get("errors") or [] if _real_error(e)]
        return bool(errors) and all(_unspecified(e) for e in errors)

    # ------------------------------------------------------------------ API
    def ping(self) -> bool:
        doc = self._call("GET", "/ping")
        pings = doc.get("pings") or []
        return any(
            str(p.get("ping") or p.get("pinged") or "").upper() in {"UP", "PINGED"}
            or p.get("responding")
            for p in pings
        )

    def jobs(self) -> list[Job]:
        return parse.jobs(self._call("GET", "/jobs"))

    def job(self, job_id: int) -> Job:
        found = parse.jobs(self._call("GET", f"/job/{job_id}"))
        if not found:
            raise JobNotFound(job_id)
        return found[0]

    def nodes(self) -> list[Node]:
        return parse.nodes(self._call("GET", "/nodes"))

    def submit(self, script: str, job: JobRequest) -> int:
        """Submit ``script`` for ``job`` in this slurmrestd's form (a heterogeneous job as its
        list of components); returns the job id, 0 under ``dry_run``. A request field this
        version cannot carry raises :class:`~slurm_plugins.client.errors.JobRequestError`."""
        body = job.to_rest(self.api)
        if _parser_key(self.api) >= (0, 0, 40):  # the script belongs to the first component
            (body.get("job") or body["jobs"][0])["script"] = script
        else:
            body = {"script": script, **body}
        doc = self._write("POST", "/job/submit", body)
        if doc is None:
            return 0
        job_id = parse.num(doc.get("job_id"))
        if job_id is None:
            raise ParseError(f"slurmrestd accepted the job but returned no id: {doc!r}")
        return job_id

    def cancel(self, job_id: int) -> None:
        self._write("DELETE", f"/job/{job_id}")


#: base URL -> the data parser negotiated with that slurmrestd, for this process
_NEGOTIATED: dict[str, str] = {}
_SUBMIT_PATH = re.compile(r"/slurm/(v\d+\.\d+\.\d+)/job/submit")


def _parser_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in version[1:].split("."))


def negotiate(openapi: Mapping[str, Any]) -> str:
    """The newest data parser that a slurmrestd's OpenAPI document serves jobs with and
    AIPool speaks (:data:`~slurm_plugins.client.job_wire.REST_FORMS`)."""
    served = {
        m.group(1) for path in openapi.get("paths") or {} if (m := _SUBMIT_PATH.fullmatch(path))
    }
    both = served & set(REST_FORMS)
    if not both:
        raise CommandError(
            f"slurmrestd serves jobs with data parsers {sorted(served) or 'none'}; "
            f"AIPool speaks {sorted(REST_FORMS)}"
        )
    return max(both, key=_parser_key)


def _real_error(e: Any) -> bool:
    if not isinstance(e, Mapping):
        return False
    code = parse.num(e.get("error_number", e.get("error_code")))
    if code == _JOB_HELD:
        return False
    return bool(code) or bool(e.get("error") or e.get("description"))


def _loggable(body: Mapping[str, Any]) -> str:
    """The body as one log line: the script as its length, environment values left out
    (they may hold secrets), everything else as sent."""

    def props(p: Mapping[str, Any]) -> dict[str, Any]:
        shown = dict(p)
        env = p.get("environment")
        if isinstance(env, Mapping):
            shown["environment"] = sorted(env)
        elif isinstance(env, list):  # 23.11+: ["K=V", …]
            shown["environment"] = sorted(str(e).split("=", 1)[0] for e in env)
        if "script" in p:
            shown["script"] = f"<{len(str(p['script']).splitlines())} lines>"
        return shown

    shown: dict[str, Any] = {}
    for key, value in body.items():
        if key == "script":
            shown[key] = f"<{len(str(value).splitlines())} lines>"
        elif key == "job" and isinstance(value, Mapping):
            shown[key] = props(value)
        elif key == "jobs" and isinstance(value, list):
            shown[key] = [props(v) for v in value]
        else:
            shown[key] = value
    return json.dumps(shown, sort_keys=False)


def _unspecified(e: Mapping[str, Any]) -> bool:
    code = parse.num(e.get("error_number", e.get("errno")))
    return code == -1 and str(e.get("error", "")) == "Unspecified error"


def _error_text(e: Mapping[str, Any]) -> str:
    return str(e.get("description") or e.get("error") or e)
