"""A fake Slurm for the portal's unit tests: jobs in memory, nodes and associations recorded."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from portal.slurm import ClusterRead
from slurm_plugins.client import SubmitRejected, parse
from slurm_plugins.client import accounts as account_diff
from slurm_plugins.client.job import JobRequest
from slurm_plugins.client.models import Association, Job, JobState, Node, Tres
from slurm_plugins.client.specs import AccountSpec, UserSpec

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm" / "22.05"


class FakeSlurm:
    def __init__(self) -> None:
        self._jobs: dict[int, Job] = {}
        self._next = 1000
        self.nodes_list: list[Node] = parse.nodes((DATA / "sinfo.json").read_text())
        self.assocs: list[Association] = parse.associations_parsable(
            (DATA / "sacctmgr_assoc.txt").read_text()
        )
        self.submitted: list[tuple[str, str, dict[str, Any]]] = []
        self.requests: list[JobRequest] = []
        self.cancelled: list[tuple[str | None, int]] = []
        self.applied: list[list[str]] = []
        self.reject: str | None = None
        self.clusters_list: list[ClusterRead] | None = None  # None: this one cluster only

    # test helpers
    def add_job(
        self, user: str, account: str, state: JobState = JobState.RUNNING, **fields: Any
    ) -> int:
        self._next += 1
        self._jobs[self._next] = Job(
            job_id=self._next,
            name=f"job{self._next}",
            user=user,
            account=account,
            partition="gpu",
            qos="normal",
            state=state,
            **fields,
        )
        return self._next

    def set_state(self, job_id: int, state: JobState) -> None:
        self._jobs[job_id] = dataclasses.replace(self._jobs[job_id], state=state)

    # SlurmPort
    def jobs(self) -> list[Job]:
        return [j for j in self._jobs.values() if j.state.is_active]

    def job(self, job_id: int) -> Job | None:
        return self._jobs.get(job_id)

    def jobs_by_id(self, job_ids: Sequence[int]) -> list[Job]:
        return [self._jobs[i] for i in job_ids if i in self._jobs]

    def nodes(self) -> list[Node]:
        return list(self.nodes_list)

    def clusters(self) -> list[ClusterRead]:
        if self.clusters_list is None:
            return [ClusterRead("local", tuple(self.nodes_list), tuple(self.jobs()))]
        return list(self.clusters_list)

    def associations(self) -> list[Association]:
        return list(self.assocs)

    def preview(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]:
        return account_diff.account_commands(self.assocs, accounts) + account_diff.user_commands(
            self.assocs, users
        )

    def apply(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]:
        commands = self.preview(accounts, users)
        self.applied.append(commands)
        return commands

    def remove(
        self, *, users: Sequence[tuple[str, str]] = (), accounts: Sequence[str] = ()
    ) -> list[str]:
        commands = account_diff.removal_commands(self.assocs, users=users, accounts=accounts)
        gone = set(users)
        self.assocs = [
            a
            for a in self.assocs
            if (a.user, a.account) not in gone and a.account not in set(accounts)
        ]
        if commands:
            self.applied.append(commands)
        return commands

    def submit_as(self, user: str, script: str, job: JobRequest) -> int:
        """Takes the request in the REST form the real port sends; records the first
        component's properties (``requests`` keeps the requests themselves)."""
        if self.reject:
            raise SubmitRejected(self.reject, argv=("POST", "/job/submit"))
        sent = job.to_rest()
        parts = sent.get("jobs") or [sent["job"]]
        self.submitted.append((user, script, dict(parts[0])))
        self.requests.append(job)
        for props in parts:
            self._next += 1
            gres = str(props.get("gres", ""))
            kind, _, count = gres.rpartition(":")
            tres = {f"gres/{kind.split(':')[0]}": int(count)} if gres else {}
            self._jobs[self._next] = Job(
                job_id=self._next,
                name=props["name"],
                user=user,
                account=props["account"],
                partition=props.get("partition", "gpu"),
                qos=props.get("qos", "normal"),
                state=JobState.PENDING,
                reason="Priority",
                tres_req=Tres(tres),
                time_limit_min=props.get("time_limit"),
                comment=props.get("comment", ""),
                stdout_path=props.get("standard_output", ""),
            )
        return self._next - len(parts) + 1

    def _cancel(self, who: str | None, job_id: int) -> None:
        self.cancelled.append((who, job_id))
        job = self._jobs[job_id]
        self._jobs[job_id] = dataclasses.replace(job, state=JobState.CANCELLED)

    def cancel_as(self, user: str, job_id: int) -> None:
        self._cancel(user, job_id)

    def cancel(self, job_id: int) -> None:
        self._cancel(None, job_id)
