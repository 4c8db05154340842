"""Acting as a user: the portal's side of the as-the-user agent (:mod:`asuser.agent`).

Whatever the portal does in a place a user can write — copying a dataset's workspace into a
version, importing a directory of the cluster file system, staging a model into a run's
directory, removing what it staged — a process running as that user does, started by the
root helper (``aipool-helper as-user USER TASK PATH``, ``ROOT_HELPER``). The kernel applies the
user's rights, so a link or rename swapped in meanwhile wins nothing the user did not have.
Data crosses as a tar stream: :func:`packed` reads the user's tree as one (the caller checks
every member, as for an uploaded archive) and :func:`unpack` sends one into a new directory.

A portal running as root (the unit and lab tests') starts the agent itself, with root's
rights, as :mod:`portal.userdirs` makes directories itself there. A portal that is
neither root nor has a helper cannot act as anyone and refuses (``Conflict``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

from portal import userdirs
from portal.errors import Conflict, ValidationFailed
from portal.i18n import gettext

TIMEOUT_S = 3600  # a pack or unpack of a large tree; a remove
STDERR_MAX = 16 * 1024
Popen = subprocess.Popen[bytes]


class AgentRefused(Exception):
    """The agent's refusal: ``kind`` is one of ``asuser.agent.ERRORS``."""

    def __init__(self, kind: str, path: str, detail: str) -> None:
        super().__init__(kind, path, detail)
        self.kind, self.path, self.detail = kind, path, detail


def _argv(username: str, task: str, path: str) -> tuple[list[str], dict[str, Any]]:
    """The command that runs ``task`` on ``path`` as ``username``, and Popen's extra words."""
    if running_as_root():
        # root (the unit and lab tests' portals): the agent itself, with root's rights, as
        # portal.userdirs makes directories itself there (the helper serves only its caller)
        return [sys.executable, "-I", "-m", "asuser.agent", task, path], {"cwd": "/"}
    if helper := userdirs.helper():
        return [*helper, "as-user", username, task, path], {}
    raise Conflict(
        gettext(
            "The portal cannot act as %(user)s here: it is not root and has no root helper "
            "(ROOT_HELPER).",
            user=username,
        )
    )


def running_as_root() -> bool:
    return os.geteuid() == 0


def _start(username: str, task: str, path: str, *, stdin: int, stdout: int) -> Popen:
    argv, extra = _argv(username, task, path)
    try:
        return subprocess.Popen(  # noqa: S603 - a fixed argv; the helper checks every word
            argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, **extra
        )
    except OSError as exc:
        raise Conflict(gettext("The root helper did not answer: %(reason)s", reason=exc)) from None


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:  # pragma: no cover - every caller asks for the pipe
        raise RuntimeError("the agent's pipe is missing")
    return stream


def _collect_stderr(proc: Popen) -> Callable[[], bytes]:
    """Read the agent's stderr beside the stream (it must never fill and block the agent)."""
    seen: list[bytes] = []

    pipe = _pipe(proc.stderr)

    def drain() -> None:
        while chunk := pipe.read(4096):
            if sum(map(len, seen)) < STDERR_MAX:
                seen.append(chunk)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()

    def result() -> bytes:
        thread.join(timeout=10)
        if not thread.is_alive():
            pipe.close()
        return b"".join(seen)

    return result


def _refusal(code: int, stderr: bytes) -> AgentRefused:
    """What the agent (or the helper before it) said, as an :class:`AgentRefused`."""
    text = stderr.decode("utf-8", "replace").strip()
    for line in reversed(text.splitlines()):
        try:
            said = json.loads(line)
        except ValueError:
            continue
        if isinstance(said, dict) and "error" in said:
            return AgentRefused(
                str(said["error"]), str(said.get("path", "")), str(said.get("detail", ""))
            )
    detail = text.removeprefix("aipool-helper: ") or f"exit {code}"
    return AgentRefused("helper", "", detail[:500])


def _finish(proc: Popen, stderr: Callable[[], bytes], *, kill: bool) -> None:
    if kill and proc.poll() is None:
        proc.kill()
    try:
        code = proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    said = stderr()
    if code != 0 and not kill:
        raise _refusal(code, said)


@contextlib.contextmanager
def packed(username: str, directory: str, *, deref: bool = False) -> Iterator[tarfile.TarFile]:
    """``directory``'s tree as ``username`` reads it: a tar stream, opened member by member.

    The caller checks each member (names, types, sizes) as it writes it; leaving the block
    early (a budget ran out, a link was found) stops the agent. With ``deref``, links that
    stay inside ``directory`` are followed (a hub's cache), as the user. An agent's refusal
    leaving the block is :class:`AgentRefused`."""
    task = "pack-deref" if deref else "pack"
    proc = _start(username, task, directory, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    stderr = _collect_stderr(proc)
    stdout = _pipe(proc.stdout)
    finished = False
    try:
        with tarfile.open(fileobj=stdout, mode="r|") as tar:
            yield tar
        finished = True
    except tarfile.TarError:
        stdout.close()
        _finish(proc, stderr, kill=False)  # the agent's refusal says why the stream broke
        raise
    finally:
        stdout.close()
        if proc.returncode is None:
            _finish(proc, stderr, kill=not finished)


def unpack(username: str, directory: str, write: Callable[[IO[bytes]], None]) -> None:
    """A new ``directory`` of ``username``'s, holding the tar stream ``write`` produces."""
    proc = _start(username, "unpack", directory, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    stderr = _collect_stderr(proc)
    stdin = _pipe(proc.stdin)
    try:
        write(stdin)
        stdin.close()
    except BrokenPipeError:
        pass  # the agent stopped reading: its refusal says why
    except BaseException:
        # a stream cut off mid-member: the agent removes its partial copy and exits
        with contextlib.suppress(OSError):
            stdin.close()
        with contextlib.suppress(AgentRefused):
            _finish(proc, stderr, kill=False)
        raise
    _finish(proc, stderr, kill=False)


def remove(username: str, path: str) -> None:
    """``path`` and all in it gone, removed as ``username`` (what their job wrote too)."""
    proc = _start(username, "remove", path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _finish(proc, _collect_stderr(proc), kill=False)


def as_field_error(exc: AgentRefused, username: str, field: str) -> ValidationFailed | Conflict:
    """The agent's refusal in the reader's language, at ``field`` where it is the input's fault."""
    where = exc.path or exc.detail
    if exc.kind == "unreadable":
        said = gettext("%(path)s: %(user)s may not read it.", path=where, user=username)
    elif exc.kind == "missing":
        said = gettext("%(path)s does not exist.", path=where)
    elif exc.kind == "not-directory":
        said = gettext("%(path)s is not a directory.", path=where)
    elif exc.kind == "outside":
        said = gettext("%(path)s links outside the model directory.", path=where)
    elif exc.kind == "bad-member":
        said = gettext(
            "%(path)s: only regular files and directories with plain names are taken (%(detail)s).",
            path=where,
            detail=exc.detail,
        )
    elif exc.kind == "exists":
        return Conflict(gettext("%(path)s is there already.", path=where))
    else:  # the file system's or the root helper's refusal: said as they said it
        detail = " ".join(w for w in (exc.path, exc.detail) if w)
        said = gettext(
            "The portal could not act as %(user)s: %(detail)s", user=username, detail=detail
        )
        return Conflict(said)
    return ValidationFailed({field: [said]})
