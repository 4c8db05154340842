"""The token service: the one reader of the slurmrestd JWT key besides Slurm.

It listens on a Unix socket in a directory only the caller's group may enter, checks the
peer's uid with ``SO_PEERCRED``, asks :func:`~slurm_plugins.tokens.policy.decide` and answers
with a short-lived HS256 token or a refusal. Every mint and every refusal is one JSON line in
its own audit log (mode 0640); the token itself is never written anywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import pwd
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.client.rest import mint_token
from slurm_plugins.tokens.policy import (
    Decision,
    Policy,
    Reason,
    Request,
    UidOf,
    decide,
    may_ask,
)
from slurm_plugins.tokens.wire import (
    MAX_LINE,
    TIMEOUT_S,
    WireError,
    encode,
    parse_request,
    read_line,
)
from slurm_plugins.tokens.wire import refusal as refusal_reply

log = logging.getLogger("aipool.tokens")
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
MAX_CLIENTS = 64


def unix_uid(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def peer_of(conn: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket, as the kernel says."""
    pid, uid, _gid = _PEERCRED.unpack(
        conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    )
    return pid, uid


def custody_problems(key: Path, caller_uid: int) -> list[str]:
    """What is wrong with the key file's custody: the caller (the portal's user) must not be
    able to read it, by owner, group or others."""
    st = key.stat()
    problems = []
    if st.st_mode & 0o007:
        problems.append(f"{key}: others may read or write it (mode {stat.S_IMODE(st.st_mode):o})")
    if st.st_uid == caller_uid:
        problems.append(f"{key}: owned by the caller (uid {caller_uid})")
    try:
        caller = pwd.getpwuid(caller_uid)
        groups = set(os.getgrouplist(caller.pw_name, caller.pw_gid))
    except KeyError:
        groups = set()
    if st.st_mode & 0o040 and st.st_gid in groups:
        problems.append(f"{key}: its group (gid {st.st_gid}) has the caller in it")
    return problems


class Audit:
    """JSON lines appended to ``path`` (0640, never through a link)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        record = {"time": round(self._clock(), 3), "event": event, **fields}
        line = json.dumps(record, sort_keys=True, ensure_ascii=True).encode() + b"\n"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with self._lock:
            fd = os.open(self.path, flags, 0o640)
            try:
                st = os.fstat(fd)
                if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o640:
                    os.fchmod(fd, 0o640)
                os.write(fd, line)
            finally:
                os.close(fd)


class TokenService:
    """Decides and mints; :meth:`handle` serves one connection."""

    def __init__(
        self,
        key: bytes,
        policy: Policy,
        audit: Audit,
        *,
        uid_of: UidOf = unix_uid,
        clock: Callable[[], float] = time.time,
        dry_run: bool = False,
    ) -> None:
        if len(key) < 16:
            raise ValueError("the JWT key is too short to be Slurm's")
        self._key = key
        self.policy = policy
        self.audit = audit
        self._uid_of = uid_of
        self._clock = clock
        self.dry_run = dry_run
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ Slurm's privileged
    def refresh(self, client: SlurmClient, me: str) -> None:
        """Read Slurm's operators and administrators and its daemons' accounts. ``me`` (this
        service's account, a Slurm operator) must be among them: else this reader does not
        see every user (``PrivateData=users``) and the list cannot be trusted. A failed read
        keeps the last list (none at first: every request is refused until one is read)."""
        try:
            levels = client.admin_levels()
            daemons = client.slurm_users()
        except SlurmError as exc:
            self.audit.write("refresh-failed", detail=str(exc)[:300])
            log.warning("could not read Slurm's operators: %s", exc)
            return
        if me not in levels:
            detail = f"{me} is not a Slurm operator: it cannot see every user's admin level"
            self.audit.write("refresh-failed", detail=detail)
            log.error("%s", detail)
            return
        self.set_privileged(levels, daemons)

    def set_privileged(self, privileged: Iterable[str], daemon_users: Iterable[str] = ()) -> None:
        names, daemons = frozenset(privileged), set(daemon_users)
        uids = {u for u in map(self._uid_of, daemons) if u is not None}
        with self._lock:
            before = self.policy
            self.policy = dataclasses.replace(
                before,
                privileged=names,
                refused=before.refused | daemons,
                refused_uids=before.refused_uids | uids,
            )
        if names != before.privileged or not daemons <= before.refused:  # audit what changed
            self.audit.write("privileged", names=sorted(names), daemon_users=sorted(daemons))

    # ------------------------------------------------------------------ one connection
    def handle(self, conn: socket.socket) -> bool:
        """Answer the one request on ``conn``; True when a token was minted. Never raises for
        what the peer sent."""
        conn.settimeout(TIMEOUT_S)
        try:
            pid, uid = peer_of(conn)
        except OSError:
            return False
        try:
            reply, minted = self._answer(conn, pid, uid)
        except OSError as exc:  # the peer went away, or the audit log cannot be written: no
            log.error("request of pid %s (uid %s) dropped: %s", pid, uid, exc)  # token leaves
            with contextlib.suppress(OSError):
                self.audit.write("dropped", peer_uid=uid, peer_pid=pid, detail=str(exc)[:300])
            return False
        with contextlib.suppress(OSError):  # the peer went away: nothing to tell it
            conn.sendall(encode(reply))
            # what the peer sent and was not read (a refused peer's, an overlong line) would
            # reset the connection before it reads the reply: end ours, take a little of it
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(0.5)
            conn.recv(MAX_LINE + 1)
        return minted

    def _answer(self, conn: socket.socket, pid: int, uid: int) -> tuple[dict[str, Any], bool]:
        seen: dict[str, Any] = {"peer_uid": uid, "peer_pid": pid}
        with self._lock:
            policy = self.policy
        if not may_ask(policy, uid):  # before reading a byte of what it sent
            return self._refuse(seen, decide(policy, uid, Request("", 0), self._uid_of)), False
        try:
            request = parse_request(read_line(conn))
        except WireError as exc:
            return self._refuse(seen, Decision(False, Reason.MALFORMED, str(exc))), False
        except TimeoutError:
            late = Decision(False, Reason.MALFORMED, "no complete request in time")
            return self._refuse(seen, late), False
        seen |= {"user": request.user[:64], "lifespan": request.lifespan}
        decision = decide(policy, uid, request, self._uid_of)
        if not decision.allowed:
            return self._refuse(seen, decision), False
        issued = int(self._clock())
        expires = issued + request.lifespan
        if self.dry_run:
            self.audit.write("dry-run", **seen, expires=expires)
            return refusal_reply(Reason.DRY_RUN, "no token minted"), False
        token = mint_token(self._key, request.user, lifespan=request.lifespan, now=issued)
        self.audit.write("minted", **seen, expires=expires)
        return {"ok": True, "user": request.user, "token": token, "expires": expires}, True

    def _refuse(self, seen: dict[str, Any], decision: Decision) -> dict[str, Any]:
        reason = decision.reason or Reason.MALFORMED
        self.audit.write("refused", **seen, reason=str(reason), detail=decision.detail)
        return refusal_reply(reason, decision.detail)


def listen(path: Path) -> socket.socket:
    """A listening socket at ``path`` (0660; its directory decides who may reach it)."""
    if path.is_socket():
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o117)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    sock.listen(128)
    return sock


def serve(
    service: TokenService,
    sock: socket.socket,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
) -> None:
    """Accept and answer connections, each in its own thread (at most ``MAX_CLIENTS`` at a
    time; more wait in the listen backlog) until ``stop`` is set; ``once``: one connection,
    then return."""
    slots = threading.BoundedSemaphore(MAX_CLIENTS)
    sock.settimeout(1.0)  # to see ``stop``

    def one(conn: socket.socket) -> None:
        try:
            service.handle(conn)
        finally:
            conn.close()
            slots.release()

    while stop is None or not stop.is_set():
        slots.acquire()
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            slots.release()
            continue
        conn.settimeout(TIMEOUT_S)
        if once:
            one(conn)
            return
        threading.Thread(target=one, args=(conn,), daemon=True).start()
