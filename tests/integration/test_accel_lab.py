"""Cambricon MLU, Hygon DCU and Kunlunxin XPU cards on a lab of their own: a job of each kind
sees exactly the cards Slurm gave it through its runtime's variable (set by the TaskProlog),
and sacct → accounting import meters it in card-hours of its kind.

The test brings up its own lab (``aipool/lab/accel.yaml``: one node with two cards of each
kind in the ``accel`` partition, fake device files) beside the lab under test, at port offset
+170 and in its own directory, and takes it down at the end.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from accounting import migrate
from accounting.ingest import import_from_slurm
from accounting.meter import UCARDS, card_kind
from accounting.models import UsageRecord
from aipool.lab.cluster import Lab
from aipool.lab.config import ACCEL_INVENTORY
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Job, JobState
from tests.integration.conftest import side_lab, wait_job, wait_until

pytestmark = pytest.mark.slurm
SHIFT = 170  # clear of the shared lab and of the other side labs' ports
VARIABLES = ("MLU_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "XPU_VISIBLE_DEVICES")
PROBE = (
    "#!/bin/bash\nset -euo pipefail\n"
    + "".join(f'echo "{v}=${{{v}:-}}"\n' for v in VARIABLES)
    + 'echo READY\nsleep "${HOLD}"\n'
)
#: kind, --gres, the variable its runtime reads, the metered type, cards
JOBS = [
    ("mlu", "mlu:mlu370:2", "MLU_VISIBLE_DEVICES", "mlu:mlu370", 2),
    ("dcu", "dcu:k100_ai:1", "HIP_VISIBLE_DEVICES", "dcu:k100_ai", 1),
    ("xpu", "xpu:p800:1", "XPU_VISIBLE_DEVICES", "xpu:p800", 1),
]
HOLD_S = 8


@pytest.fixture(scope="module")
def acc_lab(lab: Lab) -> Iterator[Lab]:
    with side_lab(lab, "accel", "acc", SHIFT, inventory=ACCEL_INVENTORY) as side:
        yield side


@pytest.fixture
def acc(acc_lab: Lab) -> Iterator[SlurmClient]:
    client = SlurmClient(env=acc_lab.cfg.env(), timeout=30)
    yield client
    left = [j.job_id for j in client.jobs()]
    if left:
        client.cancel(left)
        wait_until(lambda: not client.jobs(), 30)


def _idx(job: Job, kind: str) -> str:
    """The card indexes Slurm gave the job (``mlu:mlu370:2(IDX:0-1)``), as ``0,1``."""
    for detail in job.gres_detail:
        m = re.match(rf"{kind}\b.*\(IDX:([0-9,\-]+)\)", detail)
        if m:
            out: list[str] = []
            for part in m.group(1).split(","):
                lo, _, hi = part.partition("-")
                out += [str(i) for i in range(int(lo), int(hi or lo) + 1)]
            return ",".join(out)
    raise AssertionError(f"no {kind} in {job.gres_detail}")


def _env(path: Path) -> dict[str, str]:
    wait_until(lambda: path.exists() and "READY" in path.read_text(), 30)
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_each_kind_sees_its_cards_and_is_metered_in_card_hours(
    acc_lab: Lab, acc: SlurmClient, tmp_path: Path
) -> None:
    assert {p.name for p in acc.partitions()} >= {"accel"}
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    jobs = {}
    for kind, gres, variable, metered, cards in JOBS:
        out = acc_lab.cfg.jobs / f"accel-{kind}.out"
        opts = [
            f"--job-name=accel-{kind}",
            f"--output={out}",
            f"--chdir={acc_lab.cfg.jobs}",
            f"--export=ALL,HOLD={HOLD_S}",
            "--time=2",
            "--partition=accel",
            f"--gres={gres}",
        ]
        jobs[acc.submit(PROBE, opts)] = (kind, variable, metered, cards, out)

    for job_id, (kind, variable, _, cards, out) in jobs.items():
        job = wait_job(acc, job_id, lambda j: j.state is JobState.RUNNING, 30)
        given = _idx(job, kind)
        env = _env(out)
        assert env[variable] == given
        assert len(given.split(",")) == cards
        assert all(env[v] == "" for v in VARIABLES if v != variable), env

    def finished() -> bool:
        recs = acc.accounting(job_ids=list(jobs))
        return len(recs) == len(jobs) and all(r.state is JobState.COMPLETED for r in recs)

    wait_until(finished, 60, interval=1)
    sacct = {r.job_id: r for r in acc.accounting(job_ids=list(jobs))}
    for job_id, (kind, _, _, cards, _) in jobs.items():
        assert sacct[job_id].tres_alloc[f"gres/{kind}"] == cards

    engine = create_engine(f"sqlite:///{tmp_path / 'acct.db'}")
    migrate.upgrade(engine)
    import_from_slurm(engine, acc, since=t0)
    with engine.connect() as conn:
        rows = {r.job_id: r for r in conn.execute(select(UsageRecord))}  # type: ignore[misc]
    hours_by_kind: dict[str, float] = {}
    for job_id, (kind, _, metered, cards, _) in jobs.items():
        row = rows[job_id]
        elapsed = sacct[job_id].elapsed_s
        assert elapsed >= HOLD_S
        assert (row.npu_type, row.npu_ucards, row.gpu_ucards) == (metered, cards * UCARDS, 0)
        assert row.npu_ucs == cards * UCARDS * elapsed
        assert card_kind("npu", row.npu_type) == kind
        hours_by_kind[kind] = hours_by_kind.get(kind, 0.0) + row.npu_ucs / UCARDS / 3600
    assert set(hours_by_kind) == {"mlu", "dcu", "xpu"}
    assert hours_by_kind["mlu"] == pytest.approx(2 * sacct[_id_of(jobs, "mlu")].elapsed_s / 3600)


def _id_of(jobs: dict[int, tuple[str, str, str, int, Path]], kind: str) -> int:
    return next(j for j, spec in jobs.items() if spec[0] == kind)
