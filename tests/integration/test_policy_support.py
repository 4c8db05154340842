"""Shared harness of the policy daemon's lab tests (no tests of its own).

Each test gets its own daemon state directory and a unique job-name prefix; the daemon is
configured to steer only jobs with that prefix, so it never touches other people's work on
the shared lab. Cycles are driven by the test (``drive``) with deadlines.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aipool.lab.cluster import Lab
from slurm_plugins.client import JobNotFound, SlurmClient
from slurm_plugins.client.models import Job, JobState
from slurm_plugins.policy.config import DaemonConfig, parse_config
from slurm_plugins.policy.daemon import CycleReport, Daemon
from tests.integration.conftest import wait_until

SLEEP = "#!/bin/bash\nsleep ${HOLD:-300}\n"


@dataclass
class Harness:
    lab: Lab
    client: SlurmClient
    tmp: Path
    prefix: str = field(default_factory=lambda: f"pt{uuid.uuid4().hex[:8]}-")
    reports: list[CycleReport] = field(default_factory=list)

    def config(self, policies: list[dict[str, Any]], **extra: Any) -> DaemonConfig:
        doc = {
            "interval": 2,
            "state_dir": str(self.tmp / "state"),
            "slurm_conf": self.lab.cfg.env()["SLURM_CONF"],
            "select": {"name_prefix": self.prefix},
            "usage": {"window": "1h", "refresh": 0},
            "notify": {"log": True, "file": str(self.tmp / "notes.jsonl")},
            "samples": {"dir": str(self.tmp / "samples"), "max_age": "10m"},
            "policies": policies,
            **extra,
        }
        return parse_config(doc)

    def daemon(self, policies: list[dict[str, Any]], **extra: Any) -> Daemon:
        return Daemon(self.config(policies, **extra), self.client)

    def submit(
        self,
        name: str,
        *opts: str,
        user: str | None = None,
        hold: bool = False,
        labels: str = "",
        seconds: int = 300,
    ) -> int:
        options = [
            f"--job-name={self.prefix}{name}",
            f"--chdir={self.lab.cfg.jobs}",
            "--output=/dev/null",
            f"--export=ALL,HOLD={seconds}",
            "--time=10",
            *(["--hold"] if hold else []),
            *([f"--comment=aipool:{labels}"] if labels else []),
            *opts,
        ]
        return self.client.submit(SLEEP, options, as_user=user)

    def job(self, job_id: int) -> Job | None:
        try:
            return self.client.job(job_id)
        except JobNotFound:
            return None

    def state(self, job_id: int) -> JobState | None:
        j = self.job(job_id)
        return j.state if j else None

    def drive(self, daemon: Daemon, check: Callable[[], bool], timeout: float) -> None:
        """Run daemon cycles until ``check`` holds (deadline ``timeout`` seconds)."""

        def step() -> bool:
            report = daemon.cycle()
            if report is not None:
                self.reports.append(report)
            return check()

        wait_until(step, timeout, interval=1.0)

    def cancel_all(self) -> None:
        mine = [j.job_id for j in self.client.jobs() if j.name.startswith(self.prefix)]
        if mine:
            self.client.cancel(mine)


def harness(lab: Lab, client: SlurmClient, tmp_path: Path) -> Iterator[Harness]:
    """Body of each test module's ``h`` fixture: a harness whose jobs are cancelled after."""
    h = Harness(lab, client, tmp_path)
    try:
        yield h
    finally:
        h.cancel_all()
