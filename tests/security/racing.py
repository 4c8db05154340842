"""What the racing attacks share: a loop in a Unix user's own shell, stopped at the end."""

from __future__ import annotations

import subprocess
import textwrap

import httpx


def project(api: httpx.Client, name: str) -> int:
    """The id of the project ``name`` among the API user's own."""
    return int(next(p["id"] for p in api.get("/projects").json() if p["name"] == name))


def racer(user: str, script: str, *args: str) -> subprocess.Popen[str]:
    """A Python loop in ``user``'s own shell (``args`` are its ``sys.argv[1:]``), until stopped."""
    argv = ["runuser", "-u", user, "--", "env", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"]
    return subprocess.Popen(
        [*argv, "python3", "-c", textwrap.dedent(script), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
