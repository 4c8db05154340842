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

SCRIPT = Path(__file__).with_name("explain.lua")
NO_VAL = 4294967294
#: slurmrestd v0.0.38 job properties -> the job_desc fields the hook reads
FIELDS = {
    "account": "account",
    "qos": "qos",
    "partition": "partition",
    "comment": "comment",
    "time_limit": "time_limit",
    "nodes": "min_nodes",
    "tasks": "num_tasks",
}


def job_desc(user: str, props: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """``(job_desc, uid)`` as slurmctld shows a REST submission to the hook."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        uid = NO_VAL
    desc: dict[str, Any] = {
        "user_name": user,
        "user_id": uid,
        "time_limit": NO_VAL,
        "min_nodes": NO_VAL,
        "num_tasks": NO_VAL,
        "priority": NO_VAL,
    }
    for prop, field in FIELDS.items():
        value = props.get(prop)
        if value not in (None, ""):
            desc[field] = int(value) if field in ("time_limit", "min_nodes", "num_tasks") else value
    if gres := props.get("gres"):
        desc["tres_per_node"] = ",".join(f"gres:{g}" for g in str(gres).split(","))
    return desc, uid


def explain(hook: Path, user: str, props: Mapping[str, Any], *, timeout: float = 10) -> list[str]:
    """The hook's messages to ``user`` for a job with these REST properties; ``[]`` when it
    accepts the job, or when it cannot be replayed here (no lua5.1, no hook file)."""
    lua = shutil.which("lua5.1")
    if lua is None or not hook.is_file():
        return []
    desc, uid = job_desc(user, props)
    try:
        done = subprocess.run(
            [lua, str(SCRIPT), str(hook)],
            input=to_lua({"desc": desc, "uid": uid}),
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
