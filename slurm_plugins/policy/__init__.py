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


__all__ = ["reasons_for"]
