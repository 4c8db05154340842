"""The token service's wire format, and the client the portal asks it with.

One request per connection: a JSON object on one line, at most :data:`MAX_LINE` bytes,
``{"user": "alice", "lifespan": 120}``. One reply line: ``{"ok": true, "user": …, "token": …,
"expires": <unix time>}`` or ``{"ok": false, "reason": "<code>", "detail": "<text>"}``.
"""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import dataclass
from typing import Any

from slurm_plugins.tokens.policy import Reason, Request

MAX_LINE = 1024
TIMEOUT_S = 5.0


class WireError(ValueError):
    """A request the service cannot read: it is refused as malformed."""


class TokenError(Exception):
    """The token service refused or could not be reached; ``reason`` says which."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"token service: {reason}{f' ({detail})' if detail else ''}")
        self.reason = reason
        self.detail = detail


def parse_request(line: bytes) -> Request:
    """The request in ``line`` (without its newline), or :class:`WireError`."""
    if len(line) > MAX_LINE:
        raise WireError(f"request longer than {MAX_LINE} bytes")
    try:
        doc = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireError("request is not one line of JSON") from exc
    if not isinstance(doc, dict) or set(doc) != {"user", "lifespan"}:
        raise WireError('request must be {"user": NAME, "lifespan": SECONDS}')
    user, lifespan = doc["user"], doc["lifespan"]
    if not isinstance(user, str) or type(lifespan) is not int:
        raise WireError("user must be a string, lifespan an integer")
    return Request(user, lifespan)


def read_line(conn: socket.socket) -> bytes:
    """One line from ``conn`` (newline stripped), reading at most ``MAX_LINE + 1`` bytes."""
    buf = b""
    while b"\n" not in buf:
        chunk = conn.recv(MAX_LINE + 1 - len(buf))
        if not chunk:
            break
        buf += chunk
        if len(buf) > MAX_LINE:
            raise WireError(f"request longer than {MAX_LINE} bytes")
    line, newline, _ = buf.partition(b"\n")
    if not newline:
        raise WireError("request ends without a newline")
    return line


def encode(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, sort_keys=True).encode() + b"\n"


def refusal(reason: Reason, detail: str) -> dict[str, Any]:
    return {"ok": False, "reason": str(reason), "detail": detail}


@dataclass(frozen=True, slots=True)
class Minted:
    user: str
    token: str
    expires: int


class TokenClient:
    """Asks the token service at ``socket_path`` for a user's token."""

    def __init__(self, socket_path: str, *, timeout: float = TIMEOUT_S) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    def token(self, user: str, lifespan: int) -> Minted:
        """A token for ``user`` lasting ``lifespan`` seconds, or :class:`TokenError`."""
        request = json.dumps({"user": user, "lifespan": lifespan}).encode() + b"\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(self.timeout)
                conn.connect(self.socket_path)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    conn.sendall(request)  # refused before it was read: the reply says why
                line = _read_reply(conn)
        except OSError as exc:
            raise TokenError("unreachable", f"{self.socket_path}: {exc}") from exc
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise TokenError("bad-reply", "the reply is not JSON") from exc
        if not isinstance(doc, dict) or not doc.get("ok"):
            doc = doc if isinstance(doc, dict) else {}
            raise TokenError(str(doc.get("reason", "refused")), str(doc.get("detail", "")))
        if doc.get("user") != user or not isinstance(doc.get("token"), str):
            raise TokenError("bad-reply", "the reply is for another user or has no token")
        return Minted(user, doc["token"], int(doc["expires"]))


def _read_reply(conn: socket.socket, limit: int = 16 * MAX_LINE) -> bytes:
    buf = b""
    while b"\n" not in buf and len(buf) < limit:
        chunk = conn.recv(limit - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf.partition(b"\n")[0]
