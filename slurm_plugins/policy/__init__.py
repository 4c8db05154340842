"""The policy daemon: snapshot → pure plan → apply, with policies as named plug-ins.

Policies (:mod:`slurm_plugins.policy.policies`) never touch Slurm; only
:mod:`slurm_plugins.policy.apply` and :mod:`slurm_plugins.policy.daemon` use the client.
"""

from __future__ import annotations

from pathlib import Path


def reasons_for(job_id: int, state_dir: Path) -> list[str]:
    """Why the daemon last did what it did to ``job_id``, from its decision log in
    ``state_dir`` (what the portal and ``aipool job`` show); read lazily, so importing the
    package costs nothing."""
    from slurm_plugins.policy.state import reasons_for as read

    return read(job_id, Path(state_dir))


def decision_log(state_dir: Path) -> Path:
    """The decision log's file in ``state_dir`` (a reader may cache it while it is unchanged)."""
    from slurm_plugins.policy.state import REASONS

    return Path(state_dir) / REASONS


def decisions(state_dir: Path) -> dict[int, list[str]]:
    """Every job's latest reasons in the decision log, read once (a reader showing many jobs,
    or caching the log while its file is unchanged)."""
    from slurm_plugins.policy.state import ReasonLog

    out: dict[int, list[str]] = {}
    for key, entry in ReasonLog(Path(state_dir)).read().items():
        if key.isdigit() and isinstance(entry, dict):
            out[int(key)] = [str(r) for r in entry.get("reasons", [])]
    return out


__all__ = ["decision_log", "decisions", "reasons_for"]
