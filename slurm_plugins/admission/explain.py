"""What the admission hook tells a user about a job, found by replaying the hook offline.

sbatch prints the hook's ``slurm.log_user`` message when it refuses a job; slurmrestd 22.05
answers "Unspecified error" and drops it. So where a job came through slurmrestd (the
portal), its refusal is explained by running the very ``job_submit.lua`` that slurmctld runs,
with its table, under ``lua5.1`` on the same job description: the user reads the hook's own
words. Nothing here decides anything; the hook does.
"""

from __future__ import annotations

import pwd
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from slurm_plugins.admission.table import to_lua
from slurm_plugins.client.job import Component, JobRequest

SCRIPT = Path(__file__).with_name("explain.lua")
NO_VAL = 4294967294


def job_desc(
    user: str,
    part: Component,
    comment: str | None = None,
    environment: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], int]:
    """``(job_desc, uid)`` as slurmctld shows one component of a submission to the hook (the
    job's ``environment`` too: the hook refuses in the language it names)."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        uid = NO_VAL
    desc: dict[str, Any] = {
        "user_name": user,
        "user_id": uid,
        "time_limit": part.time_limit if part.time_limit is not None else NO_VAL,
        "min_nodes": part.nodes if part.nodes is not None else NO_VAL,
        "num_tasks": part.tasks if part.tasks is not None else NO_VAL,
        "priority": NO_VAL,
    }
    for name in ("account", "qos", "partition"):
        if value := getattr(part, name):
            desc[name] = value
    if comment:
        desc["comment"] = comment
    if environment is not None:
        desc["environment"] = dict(environment)
    if part.gres:
        desc["tres_per_node"] = ",".join(f"gres:{g}" for g in part.gres)
    return desc, uid


def explain(hook: Path, user: str, job: JobRequest, *, timeout: float = 10) -> list[str]:
    """The hook's messages to ``user`` for ``job`` (the hook sees each component of a
    heterogeneous job on its own, the comment with the first); ``[]`` when it accepts the
    job, or when it cannot be replayed here (no lua5.1, no hook file)."""
    said: list[str] = []
    for i, part in enumerate(job.components):
        desc, uid = job_desc(user, part, job.comment if i == 0 else None, job.environment)
        said += [line for line in replay(hook, desc, uid, timeout=timeout) if line not in said]
    return said


def replay(hook: Path, desc: Mapping[str, Any], uid: int, *, timeout: float = 10) -> list[str]:
    """Run the hook on one job description; its messages to the user when it refuses."""
    lua = shutil.which("lua5.1")
    if lua is None or not hook.is_file():
        return []
    try:
        done = subprocess.run(
            [lua, str(SCRIPT), str(hook)],
            input=to_lua({"desc": dict(desc), "uid": uid}),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=hook.parent,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines or lines[0].strip() == "0":
        return []
    return [ln for ln in lines[1:] if ln.strip()]
