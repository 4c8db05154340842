"""Slurm's view for one pass of a control loop: each job and the node addresses read at most
once per pass, through the portal's Slurm port.

A read that fails raises (:class:`~slurm_plugins.client.errors.SlurmError`) and ends the
pass: nothing is decided on a partial view of Slurm (a job that merely could not be read must
not look like one that ended, or its replica would be restarted twice).
"""

from __future__ import annotations

from portal.slurm import SlurmPort
from slurm_plugins.client.models import Job, Node


class JobBook:
    def __init__(self, port: SlurmPort) -> None:
        self.port = port
        self._jobs: dict[int, Job | None] = {}
        self._nodes: list[Node] | None = None

    def job(self, job_id: int | None) -> Job | None:
        """The job as Slurm reports it (queue, else accounting); None: Slurm knows no such job."""
        if job_id is None:
            return None
        if job_id not in self._jobs:
            self._jobs[job_id] = self.port.job(job_id)
        return self._jobs[job_id]

    def nodes(self) -> list[Node]:
        """Slurm's nodes (with their NodeAddr)."""
        if self._nodes is None:
            self._nodes = self.port.nodes()
        return self._nodes
