"""Scores per node kind: the benchmark program, the stored file, one job per node kind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from aipool.score import Kind, job_for, kinds_of, read_result, wait_for
from gres.bench import run
from gres.catalogue import Precision
from gres.scores import Score, load_scores, merge_scores, save_scores
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Gres, Node, NodeState
from tests.unit.jobspec.fakes import FakeSlurm, squeue_job


def test_fake_cards_report_the_catalogue_and_say_so() -> None:
    got = run("a100", "gpu1", 81920, now=5.0)
    assert [(s.precision, s.tflops, s.source) for s in got] == [
        (Precision.FP32, 19.5, "catalogue"),
        (Precision.FP16, 312.0, "catalogue"),
        (Precision.BF16, 312.0, "catalogue"),
        (Precision.INT8, 624.0, "catalogue"),
    ]
    assert {s.device for s in got} == {"a100-80gb"}
    assert run("nosuchcard", "x1") == []


def test_a_node_without_cards_is_measured_with_numpy() -> None:
    (cpu,) = run("cpu", "cpu1", now=5.0)
    assert cpu.source == "measured-cpu"
    assert cpu.precision is Precision.FP32
    assert cpu.tflops > 0


def test_the_program_writes_its_scores(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    done = subprocess.run(
        [sys.executable, "-m", "gres.bench", "--kind", "910b", "--node", "npu1", "--out", out],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == json.loads(out.read_text())
    assert {s.kind for s in read_result(out)} == {"910b"}


def test_store_merges_by_kind_and_precision(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    assert load_scores(path) == []
    old = [Score("a100", Precision.FP16, 300, "measured", "gpu1", 1.0, "A100")]
    save_scores(path, old)
    new = [
        Score("a100", Precision.FP16, 310, "measured", "gpu2", 2.0, "A100"),
        Score("a100", Precision.FP32, 19, "measured", "gpu2", 2.0, "A100"),
    ]
    save_scores(path, merge_scores(load_scores(path), new))
    got = load_scores(path)
    assert [(s.precision, s.tflops, s.node) for s in got] == [
        (Precision.FP32, 19, "gpu2"),
        (Precision.FP16, 310, "gpu2"),
    ]
    assert path.stat().st_mode & 0o777 == 0o644


def node(name: str, gres: str, partitions: tuple[str, ...], **kw: object) -> Node:
    return Node(name, kw.pop("state", NodeState.IDLE), gres=Gres.parse_list(gres),  # type: ignore[arg-type]
                partitions=partitions, **kw)  # type: ignore[arg-type]  # fmt: skip


def test_one_job_per_node_kind_on_an_available_node(tmp_path: Path) -> None:
    nodes = [
        node("gpu2", "gpu:a100:4,shard:a100:128", ("gpu",)),
        node("gpu1", "gpu:a100:4,shard:a100:128", ("gpu",), flags=frozenset({"DRAIN"})),
        node("npu1", "npu:910b:8", ("npu",)),
        node("cpu1", "", ("cpu",)),
    ]
    kinds = kinds_of(nodes)
    assert kinds == [
        Kind("910b", "npu", "npu1", "npu"),
        Kind("a100", "gpu", "gpu2", "gpu"),
        Kind("cpu", "", "cpu1", "cpu"),
    ]
    script, request, result = job_for(kinds[1], tmp_path, "/opt/rt/bin/python", "ops")
    argv = request.to_argv()
    assert "--gres=gpu:a100:1" in argv
    assert "--nodelist=gpu2" in argv
    assert "--account=ops" in argv
    assert result == tmp_path / "score-a100.json"
    assert script.endswith(
        f"exec /opt/rt/bin/python -m gres.bench --kind a100 --node gpu2 --out {result}\n"
    )
    _, cpu_request, _ = job_for(kinds[2], tmp_path, "/opt/rt/bin/python", None)
    assert not any(a.startswith("--gres") for a in cpu_request.to_argv())


def test_waiting_ends_when_the_jobs_leave_or_at_the_deadline() -> None:
    fake = FakeSlurm()
    fake.jobs[7] = squeue_job(7, "aipool-score-a100", job_state="RUNNING")
    now = [0.0]
    left = wait_for(
        SlurmClient(fake),
        [7, 8],
        3,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    assert left == {7}  # 8 is gone from the queue: done
