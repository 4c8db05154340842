"""Node agent sources and sample files; the daemon riding out Slurm trouble."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner
from slurm_plugins.policy.agent import (
    FileSource,
    LabSource,
    NvmlSource,
    SampleReader,
    parse_aicore,
    per_job,
    proc_jobs,
    source,
    write_samples,
)
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.daemon import Daemon

NPU_SMI = Path(__file__).parents[2] / "data" / "npu-smi"


def fake_proc(root: Path, pid: int, env: dict[str, str]) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0")


def test_proc_mapping_and_per_job_mean(tmp_path: Path) -> None:
    fake_proc(tmp_path, 10, {"SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "0,1"})
    fake_proc(tmp_path, 11, {"SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "1"})
    fake_proc(tmp_path, 12, {"SLURM_JOB_ID": "43", "ASCEND_RT_VISIBLE_DEVICES": "3"})
    fake_proc(tmp_path, 13, {"HOME": "/root"})
    (tmp_path / "self").mkdir()
    jobs = proc_jobs("CUDA_VISIBLE_DEVICES", tmp_path)
    assert jobs == {42: {0, 1}}
    assert per_job({0: 90.0}, jobs) == {42: 45.0}  # card 1 unused counts 0 %
    assert proc_jobs("ASCEND_RT_VISIBLE_DEVICES", tmp_path) == {43: {3}}


@pytest.mark.parametrize(
    ("name", "devices"),
    [("atlas-800t-a2-910b3.txt", 8), ("atlas-a3-ascend910.txt", 16), ("atlas-800-3000-310.txt", 4)],
)
def test_aicore_from_real_npu_smi_tables(name: str, devices: int) -> None:
    got = parse_aicore((NPU_SMI / name).read_text())
    assert len(got) == devices
    assert set(got.values()) == {0.0}


def test_file_source_and_sample_files(tmp_path: Path) -> None:
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "7").write_text("3.5\n")
    (tmp_path / "util" / "junk").write_text("x")
    (tmp_path / "util" / "8").write_text("not a number")
    src = source(f"file:{tmp_path / 'util'}")
    assert isinstance(src, FileSource)
    assert src.sample() == {7: 3.5}
    out = tmp_path / "samples"
    write_samples(out, "gpu1", {7: 3.5}, 1000.0)
    write_samples(out, "gpu1", {7: 4.0}, 1060.0)
    write_samples(out, "gpu2", {9: 50.0}, 1060.0)
    with (out / "gpu2.jsonl").open("a") as f:
        f.write("garbage\n")
    r = SampleReader(out, max_age_s=100)
    got = r.read(1100.0)
    assert [s.util for s in got[7]] == [3.5, 4.0]
    assert r.read(1100.0, jobs=[9]).keys() == {9}
    assert [s.ts for s in r.read(1150.0)[7]] == [1060.0]  # older than max_age: gone


def test_lab_source_reports_each_jobs_own_cpu_load(tmp_path: Path) -> None:
    """Real processes with a job's Slurm environment: a busy one, an idle one, one of another
    node's job; a util file overrides the measured figure."""
    import subprocess
    import sys
    import time

    def job(job_id: int, node: str, code: str) -> subprocess.Popen[bytes]:
        env = {"SLURM_JOB_ID": str(job_id), "SLURMD_NODENAME": node, "SLURM_CPUS_ON_NODE": "1"}
        return subprocess.Popen([sys.executable, "-c", code], env=env)

    busy = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"
    procs = [job(41, "gpu1", busy), job(42, "gpu1", "import time; time.sleep(30)")]
    procs.append(job(43, "gpu2", busy))
    try:
        (tmp_path / "util").mkdir()
        src = source(f"lab:{tmp_path / 'util'}", "gpu1")
        assert isinstance(src, LabSource)
        assert src.sample() == {}  # a first sample only sees the jobs
        time.sleep(1.5)
        got = src.sample()
        assert got.keys() == {41, 42}  # job 43 runs on another node
        assert got[41] > 50
        assert got[42] < 10
        (tmp_path / "util" / "42").write_text("75")
        assert src.sample()[42] == 75.0
    finally:
        for p in procs:
            p.kill()
            p.wait()
    with pytest.raises(ValueError, match="node"):
        source(f"lab:{tmp_path}")


def test_sample_file_is_pruned_when_it_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurm_plugins.policy import agent

    monkeypatch.setattr(agent, "MAX_FILE_BYTES", 200)
    for t in range(20):
        write_samples(tmp_path, "n", {1: 1.0}, 1000.0 + t * 100, keep_s=300)
    lines = (tmp_path / "n.jsonl").read_text().splitlines()
    assert len(lines) < 20
    assert json.loads(lines[-1])["ts"] == 2900.0


def test_unknown_source() -> None:
    with pytest.raises(ValueError, match="unknown sample source"):
        source("magic")


def test_nvml_source_with_a_stand_in_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Rates:
        def __init__(self, gpu: int) -> None:
            self.gpu = gpu

    class FakeNvml:
        def nvmlInit(self) -> None: ...
        def nvmlDeviceGetCount(self) -> int:
            return 2

        def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
            return i

        def nvmlDeviceGetUtilizationRates(self, h: int) -> Rates:
            return Rates([70, 10][h])

    import sys

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    fake_proc(tmp_path, 5, {"SLURM_JOB_ID": "3", "CUDA_VISIBLE_DEVICES": "1"})
    assert NvmlSource(proc=tmp_path).sample() == {3: 10.0}


# ------------------------------------------------------------------ the daemon and Slurm trouble
def down(argv: Sequence[str], stdin: str | None) -> Completed:
    return Completed(
        tuple(argv), 1, "", "squeue: error: Unable to contact slurm controller (connect failure)"
    )


def test_tick_survives_an_unreachable_controller(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = parse_config({"state_dir": str(tmp_path), "policies": [{"name": "fifo"}]})
    d = Daemon(cfg, SlurmClient(ReplayRunner({("squeue",): down, ("sinfo",): down})))
    assert d.tick() is None
    assert "cycle failed: Unable to contact slurm controller" in caplog.text


def test_run_forever_cycles_until_sigterm(tmp_path: Path) -> None:
    squeue = json.dumps({"meta": {}, "errors": [], "jobs": []})
    sinfo = json.dumps({"meta": {}, "errors": [], "nodes": []})
    runner = ReplayRunner(
        {
            ("squeue",): Completed((), 0, squeue, ""),
            ("sinfo",): Completed((), 0, sinfo, ""),
            ("sinfo", "--version"): Completed((), 0, "slurm-wlm 22.05.8\n", ""),
            ("sacct",): Completed((), 0, json.dumps({"meta": {}, "errors": [], "jobs": []}), ""),
            ("sacctmgr",): Completed((), 0, "", ""),
        }
    )
    cfg = parse_config(
        {"interval": 0.2, "state_dir": str(tmp_path), "policies": [{"name": "fifo"}]}
    )
    d = Daemon(cfg, SlurmClient(runner))
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    old = signal.getsignal(signal.SIGTERM)
    try:
        timer.start()
        t0 = time.monotonic()
        d.run_forever()
        assert time.monotonic() - t0 < 10
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, old)
    assert sum(1 for argv, _ in runner.calls if argv[0] == "squeue") >= 2
