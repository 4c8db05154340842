"""The real Slurm port over a recorded-output runner: reads cached for a short time and
dropped after the portal's own writes; finished jobs come from accounting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from portal.slurm import ClusterSlurm
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed
from tests.unit.portal.fakes import DATA


class Recorded:
    """A runner answering squeue/sinfo/sacct from the recorded 22.05 output."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> Completed:
        self.calls.append(tuple(argv))
        files = {"squeue": "squeue.json", "sinfo": "sinfo.json", "sacct": "sacct.json"}
        if argv[0] == "sinfo" and "--version" in argv:
            out = (DATA / "version.txt").read_text()
        elif argv[0] in files:
            out = (DATA / files[argv[0]]).read_text()
        else:
            out = ""
        return Completed(tuple(argv), 0, out, "")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_reads_are_shared_for_a_moment(tmp_path: Path) -> None:
    runner, clock = Recorded(), Clock()
    port = ClusterSlurm(SlurmClient(runner), None, None, cache_seconds=2, clock=clock)
    first = port.jobs()
    assert port.jobs() is first  # the same snapshot: the queue index is built once for it
    assert sum(c[0] == "squeue" for c in runner.calls) == 1
    clock.now += 2.5
    port.jobs()
    assert sum(c[0] == "squeue" for c in runner.calls) == 2
    port.cancel(first[0].job_id)  # a write through the portal drops the cached queue
    port.jobs()
    assert sum(c[0] == "squeue" for c in runner.calls) == 3
    port.nodes()
    port.nodes()
    assert sum(c[0] == "sinfo" and "--json" in c for c in runner.calls) == 1


def test_a_job_gone_from_the_queue_is_read_from_accounting() -> None:
    runner = Recorded()
    port = ClusterSlurm(SlurmClient(runner), None, None)
    from slurm_plugins.client import parse

    recorded = parse.acct_jobs((DATA / "sacct.json").read_text())
    queued = {j.job_id for j in port.jobs()}
    gone = next(r for r in recorded if r.job_id not in queued)
    job = port.job(gone.job_id)
    assert job is not None
    assert (job.user, job.account, job.state) == (gone.user, gone.account, gone.state)
    assert port.job(999_999_999) is None


def test_a_history_page_reads_queued_jobs_from_the_queue_and_the_rest_in_one_sacct() -> None:
    runner = Recorded()
    port = ClusterSlurm(SlurmClient(runner), None, None, cache_seconds=2, clock=Clock())
    from slurm_plugins.client import parse

    recorded = parse.acct_jobs((DATA / "sacct.json").read_text())
    queue = port.jobs()
    queued = queue[0].job_id
    gone = [r.job_id for r in recorded if r.job_id not in {j.job_id for j in queue}][:3]
    runner.calls.clear()
    found = port.jobs_by_id([queued, *gone, 999_999_999])
    assert {j.job_id for j in found} == {queued, *gone}
    assert next(j for j in found if j.job_id == queued) is queue[0]
    sacct = [c for c in runner.calls if c[0] == "sacct"]
    assert len(sacct) == 1
    assert sacct[0][sacct[0].index("--jobs") + 1] == ",".join(
        str(i) for i in sorted([*gone, 999_999_999])
    )
    assert not [c for c in runner.calls if c[0] == "squeue"]  # the queue's snapshot is shared
