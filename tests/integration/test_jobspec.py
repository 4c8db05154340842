"""Job specs on the real lab cluster: every topology runs, shards share a card, dependencies
hold, a node failure requeues, Jupyter answers, and hostile values arrive as plain data.

Each test asks for small shares of the lab (1/32 of a card where a GPU node is needed), waits
with deadlines and cancels what it submitted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aipool.lab.cluster import Lab
from aipool.lab.config import LabConfig
from jobspec.cli import Settings, job_report
from jobspec.library import History
from jobspec.options import ClusterConfig
from jobspec.schema import load_spec
from jobspec.status import connection_path, read_connection
from jobspec.submit import submit_specs
from slurm_plugins.client import CommandError, JobNotFound, SlurmClient
from slurm_plugins.client.models import Job, JobState
from tests.integration.conftest import wait_job, wait_until

pytestmark = pytest.mark.slurm

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "jobspec" / "programs"
PYTHON = sys.executable
# Jobs start with --export=NONE: give them this virtualenv (torch, mpi4py, jupyter) on PATH.
PATH = f"{Path(PYTHON).parent}:/usr/local/bin:/usr/bin:/bin"
# Every lab node is this host, reached on loopback.
LOOPBACK = {
    "GLOO_SOCKET_IFNAME": "lo",
    "OMPI_MCA_btl": "self,tcp",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
}
SLIVER = "1/32"  # the smallest share of a card: puts a job on a GPU node and leaves room


# Rendezvous ports are chosen by job id: a second lab on this host (CI runs two, their job ids
# alike) takes its own block, by its port offset, so two DDP jobs never meet on one port.
JOB_PORTS = ClusterConfig(port_low=ClusterConfig().port_low + LabConfig.from_env().ports.offset)


class Jobs:
    """Submits specs from one test, remembers the ids and cancels them at the end."""

    def __init__(self, client: SlurmClient, workdir: Path, history: History) -> None:
        self.client = client
        self.workdir = workdir
        self.history = history
        self.ids: list[int] = []

    def submit(self, *specs: dict[str, Any]) -> list[int]:
        loaded = [
            load_spec({"workdir": str(self.workdir), "env": {"PATH": PATH}, **s}) for s in specs
        ]
        done = submit_specs(loaded, self.client, cfg=JOB_PORTS, history=self.history, cluster="lab")
        self.ids += [d.job_id for d in done]
        return [d.job_id for d in done]

    def output(self, name: str, job_id: int) -> str:
        path = self.workdir / f"{name}-{job_id}.out"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def wait_output(self, name: str, job_id: int, pattern: str, timeout: float) -> str:
        wait_until(lambda: re.search(pattern, self.output(name, job_id)) is not None, timeout)
        return self.output(name, job_id)

    def wait_finished(self, job_id: int, timeout: float) -> None:
        def finished() -> bool:
            try:
                return self.client.job(job_id).state.is_finished
            except JobNotFound:
                return True

        wait_until(finished, timeout, interval=0.5)

    def final_state(self, job_id: int, timeout: float = 30) -> str:
        """The job's state in slurmdbd once every record of it there is finished.

        slurmctld forgets a job before slurmdbd has stored its end (and a heterogeneous job's
        components end one by one), so the accounting record can still say RUNNING for a moment.
        """
        states: list[str] = []

        def recorded() -> bool:
            records = [r for r in self.client.accounting(job_ids=[job_id]) if r.job_id == job_id]
            states[:] = [r.state.value for r in records]
            return bool(records) and all(r.state.is_finished for r in records)

        with contextlib.suppress(AssertionError):  # report what was seen; the caller asserts
            wait_until(recorded, timeout, interval=0.5)
        return states[0] if states else "UNKNOWN"


@pytest.fixture
def jobs(client: SlurmClient, lab: Lab, tmp_path: Path) -> Iterator[Jobs]:
    workdir = lab.cfg.jobs / "jobspec" / uuid.uuid4().hex[:10]
    workdir.mkdir(parents=True)
    workdir.chmod(0o777)
    j = Jobs(client, workdir, History(tmp_path / "history"))
    yield j
    if j.ids:
        client.cancel(j.ids)


def running(client: SlurmClient, job_id: int, timeout: float = 60) -> Job:
    return wait_job(client, job_id, lambda j: j.state is JobState.RUNNING, timeout)


def needs(module: str) -> None:
    """The lab extra (``pip install -e '.[lab]'``) is part of the test setup: fail, not skip."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed: run scripts/bootstrap.sh (installs '.[lab]')")


# ------------------------------------------------------------------ single process, devices
def test_the_smallest_spec_runs_on_a_quarter_card(jobs: Jobs) -> None:
    (job_id,) = jobs.submit(
        {
            "name": "hello",
            "command": f'{PYTHON} -c "print(1)"',
            "resources": {"gpus": 0.25, "time": 5},
        }
    )
    jobs.wait_finished(job_id, 60)
    assert jobs.output("hello", job_id).strip() == "1"
    assert jobs.final_state(job_id) == "COMPLETED"


def test_a_quarter_and_three_quarters_share_one_card(jobs: Jobs) -> None:
    probe = [
        "bash",
        "-c",
        'echo "card=$CUDA_VISIBLE_DEVICES shards=$SLURM_SHARDS_ON_NODE"; sleep 120',
    ]
    pin = {"nodes": ["gpu2"]}
    quarter, three = jobs.submit(
        {
            "name": "quarter",
            "command": probe,
            "resources": {"gpus": "1/4", "time": 5},
            "affinity": pin,
        },
        {
            "name": "three-quarters",
            "command": probe,
            "resources": {"gpus": 0.75, "time": 5},
            "affinity": pin,
        },
    )
    a, b = running(jobs.client, quarter), running(jobs.client, three)
    assert a.nodes == b.nodes == "gpu2"
    out_a = jobs.wait_output("quarter", quarter, r"card=\S+", 30)
    out_b = jobs.wait_output("three-quarters", three, r"card=\S+", 30)
    card_a = re.search(r"card=(\S+) shards=8", out_a)
    card_b = re.search(r"card=(\S+) shards=24", out_b)
    assert card_a is not None, out_a
    assert card_b is not None, out_b
    assert card_a.group(1) == card_b.group(1)


def test_npus_and_whole_cards(jobs: Jobs) -> None:
    show = [
        "bash",
        "-c",
        'echo "node=$SLURMD_NODENAME npus=${ASCEND_RT_VISIBLE_DEVICES:-} '
        'gpus=${CUDA_VISIBLE_DEVICES:-}"',
    ]
    npu_job, gpu_job = jobs.submit(
        {
            "name": "ascend",
            "command": show,
            "resources": {"npus": 1, "npu_type": "910b", "time": 5},
        },
        {"name": "one-card", "command": show, "resources": {"gpus": 1, "time": 5}},
    )
    out = jobs.wait_output("ascend", npu_job, r"node=", 60)
    npu = re.search(r"node=(\S+) npus=(\S*) gpus=(\S*)", out)
    assert npu, out
    assert npu.group(1).startswith("npu")
    assert re.fullmatch(r"\d+", npu.group(2)), out  # one NPU id
    assert npu.group(3) == ""
    out = jobs.wait_output("one-card", gpu_job, r"node=", 60)
    gpu = re.search(r"node=(\S+) npus=(\S*) gpus=(\S*)", out)
    assert gpu, out
    assert gpu.group(1).startswith("gpu")
    assert re.fullmatch(r"\d", gpu.group(3)), out  # one whole card
    assert gpu.group(2) == ""


# ------------------------------------------------------------------ multi-process topologies
def test_multi_gpu_starts_one_process_per_card(jobs: Jobs) -> None:
    needs("torch")
    (job_id,) = jobs.submit(
        {
            "name": "two-cards",
            "command": [PYTHON, str(PROGRAMS / "allreduce.py")],
            "topology": "multi_gpu",
            "resources": {"gpus": 2, "time": 5},
            "env": {"PATH": PATH},
        }
    )
    jobs.wait_finished(job_id, 120)
    out = jobs.output("two-cards", job_id)
    assert sorted(re.findall(r"ALLREDUCE rank=(\d) world=2 sum=3", out)) == ["0", "1"], out


def test_ddp_all_reduce_over_two_nodes(jobs: Jobs) -> None:
    needs("torch")
    (job_id,) = jobs.submit(
        {
            "name": "ddp",
            "command": [PYTHON, str(PROGRAMS / "allreduce.py")],
            "topology": "ddp",
            "resources": {"nodes": 2, "tasks_per_node": 2, "cpus": 2, "gpus": SLIVER, "time": 5},
            "env": {"PATH": PATH, **LOOPBACK},
        }
    )
    jobs.wait_finished(job_id, 180)
    out = jobs.output("ddp", job_id)
    ranks = re.findall(r"ALLREDUCE rank=(\d) world=4 sum=10 node=(\w+)", out)
    assert sorted(r for r, _ in ranks) == ["0", "1", "2", "3"], out
    assert {n for _, n in ranks} == {"gpu1", "gpu2"}
    assert jobs.final_state(job_id) == "COMPLETED"


def test_mpi_launcher_and_workers(jobs: Jobs) -> None:
    needs("mpi4py")
    (job_id,) = jobs.submit(
        {
            "name": "mpi",
            "command": [PYTHON, str(PROGRAMS / "mpi_allreduce.py")],
            "topology": "mpi",
            "resources": {"nodes": 2, "tasks_per_node": 2, "gpus": SLIVER, "time": 5},
            "env": {"PATH": PATH, **LOOPBACK},
        }
    )
    jobs.wait_finished(job_id, 120)
    out = jobs.output("mpi", job_id)
    ranks = re.findall(r"MPI rank=(\d) size=4 sum=10 node=(\w+)", out)
    assert sorted(r for r, _ in ranks) == ["0", "1", "2", "3"], out
    assert {n for _, n in ranks} == {"gpu1", "gpu2"}


def test_ps_worker_roles_find_each_other(jobs: Jobs) -> None:
    (job_id,) = jobs.submit(
        {
            "name": "ps-worker",
            "command": [PYTHON, str(PROGRAMS / "rendezvous.py")],
            "resources": {"time": 5},
            "topology": {
                "kind": "ps_worker",
                "roles": {
                    "ps": {"resources": {"cpus": 1}},
                    "worker": {"replicas": 2, "resources": {"gpus": SLIVER}},
                },
            },
        }
    )
    jobs.wait_finished(job_id, 120)
    out = jobs.output("ps-worker", job_id)
    assert re.search(r"HUB ps0@cpu1 at \S+ saw worker0@gpu\d worker1@gpu\d", out), out
    assert len(re.findall(r"PEER worker\d@gpu\d got 'ack from ps0@cpu1'", out)) == 2, out
    assert jobs.final_state(job_id) == "COMPLETED"


def test_roles_start_all_together_or_not_at_all(jobs: Jobs) -> None:
    """A heterogeneous job whose workers cannot start leaves its free roles unstarted too."""
    hogs = jobs.submit(
        *(
            {"name": f"hog{i}", "command": ["sleep", "300"], "resources": {"gpus": 4, "time": 5}}
            for i in range(2)
        )
    )
    wait_until(
        lambda: all(j.state.value == "RUNNING" for j in jobs.client.jobs() if j.job_id in hogs),
        60,
    )
    (job_id,) = jobs.submit(
        {
            "name": "ps-waits",
            "command": [PYTHON, str(PROGRAMS / "rendezvous.py")],
            "resources": {"time": 5},
            "topology": {
                "kind": "ps_worker",
                "roles": {
                    "ps": {"resources": {"cpus": 1}},
                    "worker": {"replicas": 2, "resources": {"gpus": 1}},
                },
            },
        }
    )

    def components() -> list[str]:
        return [j.state.value for j in jobs.client.jobs() if job_id in (j.job_id, j.het_job_id)]

    wait_until(lambda: len(components()) == 2, 30)  # a ps component, a worker component
    deadline = time.monotonic() + 8  # the ps role's CPU node is free all along
    while time.monotonic() < deadline:
        states = components()
        assert "RUNNING" not in states, states
        time.sleep(0.5)
    jobs.client.cancel(hogs)
    jobs.wait_finished(job_id, 120)
    assert jobs.final_state(job_id) == "COMPLETED"
    out = jobs.output("ps-waits", job_id)
    assert len(re.findall(r"PEER worker\d@gpu\d got 'ack from ps0@cpu1'", out)) == 2, out


def test_master_worker_all_reduce(jobs: Jobs) -> None:
    needs("torch")
    (job_id,) = jobs.submit(
        {
            "name": "master-worker",
            "command": [PYTHON, str(PROGRAMS / "allreduce.py")],
            "resources": {"time": 5},
            "env": {"PATH": PATH, **LOOPBACK},
            "topology": {
                "kind": "master_worker",
                "roles": {
                    "master": {"resources": {"cpus": 1}},
                    "worker": {"replicas": 2, "resources": {"gpus": SLIVER}},
                },
            },
        }
    )
    jobs.wait_finished(job_id, 180)
    out = jobs.output("master-worker", job_id)
    ranks = re.findall(r"ALLREDUCE rank=(\d) world=3 sum=6 node=(\w+)", out)
    assert sorted(ranks) == [("0", "cpu1"), ("1", "gpu1"), ("2", "gpu2")], out


def test_scheduler_server_worker_roles_find_each_other(jobs: Jobs) -> None:
    # Slurm gives each component of a heterogeneous job nodes of its own: one role per node.
    (job_id,) = jobs.submit(
        {
            "name": "ssw",
            "command": [PYTHON, str(PROGRAMS / "rendezvous.py")],
            "resources": {"time": 5},
            "topology": {
                "kind": "scheduler_server_worker",
                "roles": {
                    "scheduler": {"resources": {"cpus": 1}},
                    "server": {"resources": {"cpus": 1}, "partition": "npu"},
                    "worker": {"resources": {"gpus": SLIVER}},
                },
            },
        }
    )
    jobs.wait_finished(job_id, 120)
    out = jobs.output("ssw", job_id)
    assert re.search(r"HUB scheduler0@cpu1 at \S+ saw server0@npu1 worker0@gpu\d", out), out
    assert jobs.final_state(job_id) == "COMPLETED"


# ------------------------------------------------------------------ dependencies, restarts
def test_dependencies_hold_a_job_until_its_parent_ends(jobs: Jobs) -> None:
    stamp = ["bash", "-c", 'echo "start=$(date +%s.%N)"; sleep "$HOLD"; echo "end=$(date +%s.%N)"']
    parent, child, never = jobs.submit(
        {
            "name": "parent",
            "command": stamp,
            "env": {"PATH": PATH, "HOLD": "8"},
            "resources": {"time": 5},
        },
        {
            "name": "child",
            "command": stamp,
            "env": {"PATH": PATH, "HOLD": "0"},
            "resources": {"time": 5},
            "dependencies": {"afterok": ["parent"]},
        },
        {
            "name": "on-failure",
            "command": stamp,
            "env": {"PATH": PATH, "HOLD": "0"},
            "resources": {"time": 5},
            "dependencies": {"afternotok": ["parent"]},
        },
    )
    running(jobs.client, parent)
    held = jobs.client.job(child)
    assert held.state is JobState.PENDING
    assert held.reason == "Dependency"
    assert str(parent) in held.dependency
    jobs.wait_finished(child, 90)
    parent_end = float(re.findall(r"end=([\d.]+)", jobs.output("parent", parent))[0])
    child_start = float(re.findall(r"start=([\d.]+)", jobs.output("child", child))[0])
    assert child_start >= parent_end
    jobs.wait_finished(never, 60)  # afternotok of a success can never run: cancelled
    assert jobs.output("on-failure", never) == ""


def test_a_node_failure_requeues_a_job_with_a_restart_policy(jobs: Jobs, lab: Lab) -> None:
    (job_id,) = jobs.submit(
        {
            "name": "survivor",
            "command": ["bash", "-c", 'echo "run ${SLURM_RESTART_COUNT:-0}"; sleep 600'],
            "partition": "npu",
            "affinity": {"nodes": ["npu1"]},
            "resources": {"time": 15},
            "restart": {"on_node_failure": True, "max_restarts": 2},
        }
    )
    running(jobs.client, job_id)
    jobs.wait_output("survivor", job_id, r"run 0", 30)
    try:
        jobs.client.update_node("npu1", state="DOWN", reason="jobspec restart test")
        wait_job(jobs.client, job_id, lambda j: j.restart_count >= 1, 30)
    finally:
        # With ReturnToService=2 the node comes back by itself once slurmd answers; it is
        # resumed only if it has not, and it may come back between the read and the resume
        # (slurmctld then refuses RESUME as an invalid state for a node that is up)
        def up() -> bool:
            return next(n for n in jobs.client.nodes() if n.name == "npu1").available

        if not up():
            try:
                jobs.client.update_node("npu1", state="RESUME")
            except CommandError:
                if not up():
                    raise
    out = jobs.wait_output("survivor", job_id, r"run 1", 120)
    assert out.splitlines()[:1] == ["run 0"]


# ------------------------------------------------------------------ Jupyter
def test_jupyter_answers_on_its_port_with_its_token(jobs: Jobs, tmp_path: Path) -> None:
    needs("jupyter_server")
    (job_id,) = jobs.submit(
        {"name": "notebook", "jupyter": {"app": "server"}, "resources": {"cpus": 1, "time": 5}}
    )
    conn_file = connection_path(jobs.workdir, job_id)
    wait_until(lambda: read_connection(conn_file) is not None, 60)
    conn = read_connection(conn_file)
    assert conn is not None
    # the user and the directory's group (the portal's, in the directories it gives users)
    assert oct(conn_file.stat().st_mode & 0o777) == "0o640"
    base = f"http://{conn.host}:{conn.port}{conn.base_url}api/status"
    assert conn.base_url == f"/jupyter/{job_id}/"  # where the portal proxies it

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{base}?token={conn.token}", timeout=5) as r:  # noqa: S310
                return r.status == 200
        except OSError:
            return False

    wait_until(answers, 60, interval=0.5)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(base, timeout=5)
    assert refused.value.code == 403
    refused.value.close()
    report = job_report(jobs.client, Settings(state_dir=tmp_path, cluster="lab"), job_id)
    assert report["jupyter"]["port"] == conn.port
    jobs.client.cancel([job_id])
    wait_until(lambda: not conn_file.exists(), 30)
    assert not answers()


def test_jupyter_stops_at_its_time_limit(jobs: Jobs) -> None:
    needs("jupyter_server")
    (job_id,) = jobs.submit(
        {"name": "short-notebook", "jupyter": {"app": "server"}, "resources": {"time": 1}}
    )
    conn_file = connection_path(jobs.workdir, job_id)
    wait_until(lambda: read_connection(conn_file) is not None, 60)
    # slurmctld checks time limits about every 30 s: the job ends 60-100 s after it started
    wait_until(lambda: not conn_file.exists(), 150, interval=1)
    assert jobs.final_state(job_id) == "TIMEOUT"


# ------------------------------------------------------------------ hostile values
HOSTILE = [
    "'; rm -rf ~'",
    "$(id)",
    "`id`",
    "\"double\" 'single'",
    "#SBATCH --qos=high",
    "; touch PWNED",
    "ünïcödé ✓ 日本語",
    "--partition=npu",
    "",
    "a\\b",
]


def test_hostile_values_reach_the_job_as_data(jobs: Jobs) -> None:
    dump = jobs.workdir / "dump.json"
    env = {f"HOSTILE_{i}": v for i, v in enumerate(HOSTILE)}
    script = (
        f'exec {PYTHON} {PROGRAMS / "dump.py"} "$@" "$HOSTILE_1"\n'
        "#SBATCH --partition=npu\n#SBATCH --qos=high\n"
    )
    (job_id,) = jobs.submit(
        {
            "name": "hostile",
            "command": [PYTHON, str(PROGRAMS / "dump.py"), *HOSTILE],
            "env": {"PATH": PATH, "DUMP_TO": str(dump), **env},
            "resources": {"time": 5},
        }
    )
    (script_id,) = jobs.submit(
        {
            "name": "hostile-script",
            "script": script,
            "resources": {"time": 5},
            "env": {"PATH": PATH, "DUMP_TO": f"{dump}.script", **env},
        }
    )
    jobs.wait_finished(job_id, 60)
    jobs.wait_finished(script_id, 60)
    got = json.loads(dump.read_text(encoding="utf-8"))
    assert got == {"argv": HOSTILE, "env": env}
    assert json.loads(Path(f"{dump}.script").read_text(encoding="utf-8"))["argv"] == ["$(id)"]
    assert not any(p.name == "PWNED" for p in jobs.workdir.iterdir())
    # The #SBATCH lines in the script changed nothing (accounting may lag a moment behind).
    records: list[Any] = []

    def recorded() -> bool:
        records[:] = [r for r in jobs.client.accounting(job_ids=[script_id]) if r.partition]
        return bool(records)

    wait_until(recorded, 30, interval=1)
    assert (records[0].partition, records[0].qos) == ("cpu", "normal")


# ------------------------------------------------------------------ the CLI on the lab
def test_cli_job_shows_state_and_progress(jobs: Jobs, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jobspec.cli import COMMANDS

    submit, _, job, cancel, _ = COMMANDS
    spec = tmp_path / "progress.yaml"
    spec.write_text(
        "name: progress\n"
        "command: [bash, -c, 'echo \"progress: 40%\"; sleep 120']\n"
        f"workdir: {jobs.workdir}\nenv: {{PATH: '{PATH}'}}\nresources: {{time: 5}}\n"
    )
    obj = {
        "slurm_client": jobs.client,
        "jobspec_settings": Settings(state_dir=tmp_path, cluster="lab"),
    }
    runner = CliRunner()
    res = runner.invoke(submit, [str(spec)], obj=obj, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    job_id = int(res.output.split()[0])
    jobs.ids.append(job_id)
    running(jobs.client, job_id)
    jobs.wait_output("progress", job_id, r"progress: 40%", 30)
    res = runner.invoke(job, [str(job_id)], obj=obj, catch_exceptions=False)
    assert "state:    RUNNING" in res.output
    assert "progress: 40%" in res.output
    assert "name: progress" in res.output
    res = runner.invoke(cancel, [str(job_id)], obj=obj, catch_exceptions=False)
    assert res.exit_code == 0
    jobs.wait_finished(job_id, 30)
    assert os.path.exists(jobs.workdir / f"progress-{job_id}.out")
