"""Run the rendered job_submit.lua offline: lua5.1, a fake ``slurm`` table and fake jobs.

A test installs a policy into a temporary directory (the same files ``aipool policy render``
writes), then runs steps through ``harness.lua``: calls of ``slurm_job_submit`` /
``slurm_job_modify`` with fake ``job_desc`` tables, file operations and clock changes. Each
call comes back as an :class:`Outcome`: return code, messages and the fields it wrote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from slurm_plugins.admission.config import LAB_POLICY, PolicyConfig, load_policy
from slurm_plugins.admission.render import HOOK_FILE, render_hook, write_files
from slurm_plugins.admission.table import lua_string, to_lua

HARNESS = Path(__file__).with_name("harness.lua")
NO_VAL = 4294967294
INFINITE = 4294967295
#: Slurm's default account of each demo user (what sacctmgr says in the lab).
DEFAULT_ACCOUNT = {
    "root": "root",
    "alice": "nlp",
    "bob": "vision",
    "carol": "cs101",
    "dave": "cs101",
}
UID = {"root": 0, "alice": 1001, "bob": 1002, "carol": 1003, "dave": 1004}


def lua() -> str:
    found = shutil.which("lua5.1")
    if found is None:
        pytest.fail("the hook tests need lua5.1 and lua-posix: apt-get install lua5.1 lua-posix")
    return found


@dataclass(frozen=True)
class Outcome:
    name: str
    rc: int
    user: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    set: dict[str, Any] = field(default_factory=dict)
    #: job_desc fields the hook read, and how often
    reads: dict[str, int] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.rc == 0

    @property
    def message(self) -> str:
        return "\n".join(self.user)


def lab_policy() -> PolicyConfig:
    return load_policy(LAB_POLICY)


def install(directory: Path, policy: PolicyConfig | None = None, **kw: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_files(render_hook(policy or lab_policy(), **kw), directory)
    return directory / HOOK_FILE


def job(user: str = "carol", **fields: Any) -> dict[str, Any]:
    """A job_desc as slurmctld shows it to the hook: unset numbers are NO_VAL."""
    base: dict[str, Any] = {
        "user_name": user,
        "user_id": uid_of(user),
        "default_account": DEFAULT_ACCOUNT.get(user, user),
        "time_limit": NO_VAL,
        "min_nodes": NO_VAL,
        "num_tasks": NO_VAL,
        "priority": NO_VAL,
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def uid_of(user: str) -> int:
    return UID.get(user, 2000 + zlib.crc32(user.encode("utf-8", "surrogatepass")) % 100_000)


def submit(name: str, user: str = "carol", **fields: Any) -> dict[str, Any]:
    return {"name": name, "call": "submit", "uid": uid_of(user), "job": job(user, **fields)}


def run(hook: Path, steps: Sequence[Mapping[str, Any]], *, no_posix: bool = False) -> list[Outcome]:
    steps_file = hook.parent.parent / f"steps-{hook.parent.name}.lua"
    steps_file.write_text("return " + to_lua(list(steps)) + "\n")
    argv = [lua(), str(HARNESS), str(hook), str(steps_file)]
    if no_posix:
        argv.append("no-posix")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise AssertionError(f"lua5.1 failed ({done.returncode}):\n{done.stderr}")
    return [_outcome(json.loads(line)) for line in done.stdout.splitlines() if line]


def _outcome(data: dict[str, Any]) -> Outcome:
    # the harness writes an empty Lua table as {}: lists of messages come back as lists
    return Outcome(
        name=data["name"],
        rc=data["rc"],
        user=list(data["user"] or []),
        errors=list(data["errors"] or []),
        info=list(data["info"] or []),
        set=dict(data["set"] or {}),
        reads=dict(data["reads"] or {}),
    )


def parses(path: Path) -> bool:
    """Does lua5.1 accept ``path`` as a chunk (without running it)?"""
    done = subprocess.run(
        [lua(), "-e", f"assert(loadfile({lua_string(str(path))}))"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0


def run_one(hook: Path, step: Mapping[str, Any]) -> Outcome:
    (out,) = run(hook, [step])
    return out
