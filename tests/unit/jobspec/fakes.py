"""A stand-in for the Slurm commands: sbatch hands out ids, squeue/sacct answer from a table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from slurm_plugins.client.runner import Completed


class FakeSlurm:
    """Runner for :class:`SlurmClient`; ``reject`` makes sbatch refuse jobs of that name."""

    def __init__(
        self, *, first_id: int = 100, reject: str | None = None, release: str = "22.05.8"
    ) -> None:
        self.next_id = first_id
        self.release = release
        self.reject = reject
        self.calls: list[tuple[tuple[str, ...], str | None]] = []
        self.jobs: dict[int, dict[str, Any]] = {}
        self.accounted: dict[int, dict[str, Any]] = {}

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float
    ) -> Completed:
        key = tuple(argv)
        self.calls.append((key, input))
        if key[0] == "runuser":  # runuser -u USER -- sbatch …
            key = key[4:]
        if key[0] == "sbatch":
            name = next(a.split("=", 1)[1] for a in key if a.startswith("--job-name="))
            if name == self.reject:
                return Completed(key, 1, "", "sbatch: error: Invalid qos specification\n")
            self.next_id += 1
            return Completed(key, 0, f"{self.next_id}\n", "")
        if key[0] == "scancel":
            return Completed(key, 0, "", "")
        if key[0] == "squeue":
            wanted = [int(key[key.index("--jobs") + 1])] if "--jobs" in key else list(self.jobs)
            if "--jobs" in key and wanted[0] not in self.jobs:
                return Completed(key, 1, "", "slurm_load_jobs error: Invalid job id specified\n")
            return Completed(key, 0, json.dumps({"jobs": [self.jobs[i] for i in wanted]}), "")
        if key == ("sinfo", "--version"):  # the 22.05 shapes below, whatever it says
            return Completed(key, 0, f"slurm-wlm {self.release}\n", "")
        if key[0] == "sacct":
            return Completed(key, 0, json.dumps({"jobs": list(self.accounted.values())}), "")
        raise AssertionError(f"unexpected command {key}")

    @property
    def submitted(self) -> list[tuple[tuple[str, ...], str | None]]:
        return [c for c in self.calls if "sbatch" in c[0][:5]]


def squeue_job(job_id: int, name: str, **extra: Any) -> dict[str, Any]:
    """A job as 22.05's ``squeue --json`` prints it (only the fields the parser reads)."""
    return {
        "job_id": job_id,
        "name": name,
        "job_state": "RUNNING",
        "user_name": "alice",
        "account": "nlp",
        "partition": "gpu",
        "qos": "normal",
        "nodes": "gpu1",
        "state_reason": "None",
        **extra,
    }
