"""How values travel to Slurm's own line parsers, and how failures come back.

Nothing here reaches a shell: values go as argv items or as lines that ``scontrol`` and
``sacctmgr`` parse themselves, so anything that could split a line is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from slurm_plugins.client.errors import (
    CommandError,
    ControllerUnavailable,
    JobNotFound,
    SlurmError,
    SubmitRejected,
    UnsatisfiableRequest,
)
from slurm_plugins.client.runner import Completed
from slurm_plugins.client.specs import CLEAR

_UNREACHABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Problem talking to the database",
    "Zero Bytes were transmitted or received",
    "slurmdbd: Connection",
)
_UNSATISFIABLE = (
    "Invalid generic resource (gres) specification",
    "Requested node configuration is not available",
    "Invalid feature specification",
    "Invalid partition name specified",
    "Node count specification invalid",
    "More processors requested than permitted",
    "Invalid qos specification",
    "Invalid account or account/partition combination specified",
)


def kv(attrs: Mapping[str, str]) -> str:
    """``k=v k2=v2`` for a ``set`` clause, every value checked."""
    return " ".join(f"{k}={quote_value(v)}" for k, v in attrs.items())


_SAFE_VALUE = re.compile(r"[A-Za-z0-9_.,:/=@+\-\[\]]*")


def quote_value(v: str) -> str:
    """Values go to Slurm's own line parser (not a shell); refuse anything that could split."""
    if v == CLEAR:
        return v
    if not _SAFE_VALUE.fullmatch(v):
        if any(c in v for c in "\n\r\"'") or any(ord(c) < 32 for c in v):
            raise SlurmError(f"refusing value with quotes or control characters: {v!r}")
        return f'"{v}"'
    return v


def classify(done: Completed) -> SlurmError:
    """Map a failed command to the most specific error, keeping Slurm's own message."""
    err = (done.stderr or done.stdout).strip()
    message = _user_message(err) or f"{done.argv[0]} exited with {done.returncode}"
    kind: type[SlurmError] = CommandError
    if any(s in err for s in _UNREACHABLE):
        kind = ControllerUnavailable
    elif "Invalid job id" in err:
        return JobNotFound(
            first_job_id(done.argv),
            argv=done.argv,
            returncode=done.returncode,
            stderr=done.stderr,
        )
    elif "sbatch" in done.argv:
        kind = UnsatisfiableRequest if any(s in err for s in _UNSATISFIABLE) else SubmitRejected
    return kind(message, argv=done.argv, returncode=done.returncode, stderr=done.stderr)


def _user_message(err: str) -> str:
    """Slurm's lines without the ``sbatch: error:`` prefixes, joined."""
    msgs = [re.sub(r"^\w+: (error: )?", "", line).strip() for line in err.splitlines()]
    return "; ".join(m for m in msgs if m)


def first_job_id(argv: Sequence[str]) -> str:
    for a in reversed(argv):
        if a.replace(",", "").replace("_", "").isdigit():
            return a
    return "?"
