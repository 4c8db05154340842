"""Precision and score on the lab: a bf16 job lands on a node whose cards run bf16, a spec no
card of the pool can serve is refused before Slurm sees it, and a score job per node kind
reports the catalogue's figures for the lab's fake cards (and says so) and measures the CPU
node. The lab's cluster is unchanged: card models are node features already."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from accounting import migrate
from accounting.energy import import_energy, job_energy, read_power
from aipool.lab.cluster import Lab
from aipool.score import score
from gres.scores import load_scores
from jobspec.errors import SpecError
from jobspec.schema import load_spec
from jobspec.submit import submit_specs
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from slurm_plugins.node.agent import Agent
from slurm_plugins.node.sources import LabSource
from tests.integration.conftest import wait_job, wait_until

pytestmark = pytest.mark.slurm


@pytest.fixture
def workdir(lab: Lab) -> Path:
    d = lab.cfg.jobs / "score" / uuid.uuid4().hex[:10]
    d.mkdir(parents=True)
    d.chmod(0o777)
    return d


def spec(workdir: Path, name: str, resources: dict[str, Any]) -> Any:
    return load_spec(
        {
            "name": name,
            "workdir": str(workdir),
            "command": "true",
            "resources": {"time": 5, **resources},
        }
    )


def started(j: Any) -> bool:
    return j.state is JobState.RUNNING or j.state.is_finished


def test_precision_places_jobs_on_cards_that_run_it(client: SlurmClient, workdir: Path) -> None:
    gpu, npu = submit_specs(
        [
            spec(workdir, "bf16-gpu", {"gpus": "1/32", "precision": "bf16"}),
            spec(workdir, "bf16-npu", {"npus": 1, "precision": "bf16", "min_score": 300}),
        ],
        client,
    )
    on_gpu = wait_job(client, gpu.job_id, started, 60)
    on_npu = wait_job(client, npu.job_id, started, 60)
    assert on_gpu.features == "a100"
    assert on_gpu.nodes in {"gpu1", "gpu2"}
    assert on_npu.features == "910b"
    assert on_npu.nodes == "npu1"
    # the two jobs above may already have ended and left the controller (MinJobAge=5):
    # what must not be there afterwards is a job that was not there before
    before = {j.job_id for j in client.jobs(active_only=False)}
    with pytest.raises(SpecError, match="no GPU model here runs fp8"):
        submit_specs([spec(workdir, "fp8", {"gpus": 1, "precision": "fp8"})], client)
    with pytest.raises(SpecError, match="at 400 TFLOPS"):
        submit_specs(
            [spec(workdir, "big", {"gpus": 1, "precision": "bf16", "min_score": 400})], client
        )
    assert not {j.job_id for j in client.jobs(active_only=False)} - before  # none reached Slurm


def test_a_score_job_per_node_kind(lab: Lab, client: SlurmClient, workdir: Path) -> None:
    store = workdir / "scores.json"
    res = CliRunner().invoke(
        score,
        ["run", "--out-dir", str(workdir), "--store", str(store), "--timeout", "90",
         "--python", str(lab.cfg.runtime / "bin" / "python")],
        obj=client,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    got = {(s.kind, s.precision.value): s for s in load_scores(store)}
    assert got["a100", "bf16"].source == "catalogue"  # fake device files: said so
    assert got["a100", "bf16"].tflops == 312.0
    assert got["910b", "fp16"].source == "catalogue"
    assert got["cpu", "fp32"].source == "measured-cpu"
    assert got["cpu", "fp32"].tflops > 0
    assert got["cpu", "fp32"].node == "cpu1"


def test_a_jobs_energy_from_the_node_agents_samples(
    client: SlurmClient, workdir: Path, tmp_path: Path
) -> None:
    """A real job on a lab GPU, the node agent's lab source reading its processes (as root it
    may read them all), and accounting's import: the made-up draw is recorded and marked."""
    # a busy loop for 20 s, on one line (a command's words hold no newline)
    busy = "import time; t = time.time(); sum(1 for _ in iter(lambda: time.time() - t < 20, False))"
    busy_spec = load_spec(
        {
            "name": "busy",
            "workdir": str(workdir),
            "command": [sys.executable, "-c", busy],
            "resources": {"gpus": 1, "time": 5},
        }
    )
    (done,) = submit_specs([busy_spec], client)
    job = wait_job(client, done.job_id, lambda j: j.state is JobState.RUNNING, 60)
    samples = tmp_path / "samples"
    agent = Agent(LabSource(job.nodes, tmp_path / "util"), samples, job.nodes)

    def drew_twice() -> bool:
        """Two samples of the job drawing power: on a loaded machine its loop may start some
        seconds after Slurm says RUNNING, and an idle job's made-up draw is nil."""
        agent.run_once()
        series = [x for x in read_power(samples) if x.job_id == done.job_id]
        return sum(1 for x in series for p in x.points if p.watts > 0) >= 2

    wait_until(drew_twice, 30, interval=2)
    engine = create_engine(f"sqlite:///{tmp_path / 'acct.db'}")
    migrate.upgrade(engine)
    with Session(engine) as s:
        import_energy(s, "lab", read_power(samples))
        s.commit()
    with engine.connect() as conn:
        got = job_energy(conn, "lab", [done.job_id])[done.job_id]
    assert got.source == "fake"
    assert got.kwh > 0
