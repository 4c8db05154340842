"""Node agent sources and sample files: /proc mapping, the file, lab, NVML and npu-smi
sources (through gres's probes, with stand-ins and recorded tables), the shared reading."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from gres.errors import ProbeError
from gres.probe import npu_samples
from slurm_plugins.node import SampleReader, write_samples
from slurm_plugins.node.health import NpuSmiHealth
from slurm_plugins.node.sources import (
    FileSource,
    LabSource,
    NpuSmi,
    NpuSmiSource,
    NvmlSource,
    cards_in,
    fake_watts,
    per_job,
    proc_jobs,
    source,
    utilisation,
)

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
    got = utilisation(npu_samples((NPU_SMI / name).read_text()))
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
    node's job; a util file overrides the measured figure. The lab's own jobs may run on this
    host meanwhile (the integration suite runs beside this one): these jobs' ids are far above
    any the lab reaches, and only they are looked at."""
    import subprocess
    import sys
    import time

    busy_id, idle_id, elsewhere_id = 9_000_041, 9_000_042, 9_000_043

    def job(job_id: int, node: str, code: str) -> subprocess.Popen[bytes]:
        env = {"SLURM_JOB_ID": str(job_id), "SLURMD_NODENAME": node, "SLURM_CPUS_ON_NODE": "1"}
        return subprocess.Popen([sys.executable, "-c", code], env=env)

    def ours(sample: dict[int, float]) -> dict[int, float]:
        return {k: v for k, v in sample.items() if k >= busy_id}

    busy = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"
    procs = [job(busy_id, "gpu1", busy), job(idle_id, "gpu1", "import time; time.sleep(30)")]
    procs.append(job(elsewhere_id, "gpu2", "import time; time.sleep(30)"))  # no third core
    try:
        (tmp_path / "util").mkdir()
        src = source(f"lab:{tmp_path / 'util'}", "gpu1")
        assert isinstance(src, LabSource)
        assert src.sample() == {}  # a first sample only sees the jobs
        time.sleep(1.5)
        got = ours(src.sample())
        assert got.keys() == {busy_id, idle_id}  # the third runs on another node
        # a busy loop gets its share of a core (a small one on CI's two cores, with two labs
        # and the browser tests beside it); sleep gets next to nothing
        assert got[busy_id] > 3 * got[idle_id] + 5, got
        assert got[idle_id] < 10
        (tmp_path / "util" / str(idle_id)).write_text("75")
        assert src.sample()[idle_id] == 75.0
    finally:
        for p in procs:
            p.kill()
            p.wait()
    with pytest.raises(ValueError, match="node"):
        source(f"lab:{tmp_path}")


def test_sample_file_is_pruned_when_it_grows(tmp_path: Path) -> None:
    for t in range(20):
        write_samples(tmp_path, "n", {1: 1.0}, 1000.0 + t * 100, keep_s=300, max_bytes=200)
    lines = (tmp_path / "n.jsonl").read_text().splitlines()
    assert len(lines) < 20
    assert json.loads(lines[-1])["ts"] == 2900.0


def test_unknown_source() -> None:
    with pytest.raises(ValueError, match="unknown sample source"):
        source("magic")


class NVMLError(Exception):
    pass


class FakeNvml:
    """The NVML calls the sampling makes, with NVML's names and shapes; card 2 cannot be
    opened, card 1 does not report power."""

    NVMLError = NVMLError
    NVML_TEMPERATURE_GPU = 0

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int:
        return 3

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if i == 2:
            raise NVMLError("GPU is lost")
        return i

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return h

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=[70, 10][h], memory=5)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(total=80 << 30, used=(h + 1) << 30, free=0)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        if h == 1:
            raise NVMLError("Not Supported")
        return 250_500

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        assert sensor == 0
        return 40 + h


def test_nvml_source_with_a_stand_in_library(tmp_path: Path) -> None:
    fake_proc(tmp_path, 5, {"SLURM_JOB_ID": "3", "CUDA_VISIBLE_DEVICES": "1"})
    fake_proc(tmp_path, 6, {"SLURM_JOB_ID": "4", "CUDA_VISIBLE_DEVICES": "0,2"})
    # job 4's card 2 cannot be read: it counts 0 %, as a card the job does not use
    assert NvmlSource(proc=tmp_path, nvml=FakeNvml()).sample() == {3: 10.0, 4: 35.0}


def test_nvml_source_without_a_driver_reports_no_jobs(tmp_path: Path) -> None:
    class NoDriver(FakeNvml):
        def nvmlInit(self) -> None:
            raise NVMLError("Driver Not Loaded")

    fake_proc(tmp_path, 5, {"SLURM_JOB_ID": "3", "CUDA_VISIBLE_DEVICES": "1"})
    assert NvmlSource(proc=tmp_path, nvml=FakeNvml()).sample() == {3: 10.0}
    assert NvmlSource(proc=tmp_path, nvml=NoDriver()).sample() == {}  # not "idle"


def npu_smi_tool(tmp_path: Path, table: Path, *, rc: int = 0) -> tuple[str, ...]:
    """A stand-in ``npu-smi`` that prints a recorded table and counts its runs."""
    tool = tmp_path / "npu-smi"
    runs = tmp_path / "runs"
    tool.write_text(
        f'#!/bin/sh\necho run >> {runs}\n[ "$1" = info ] || exit 64\ncat {table}\nexit {rc}\n'
    )
    tool.chmod(0o755)
    return (str(tool),)


def test_npu_smi_source_and_health_share_one_reading(tmp_path: Path) -> None:
    busy = tmp_path / "busy.txt"  # the recorded 910B3 table with chip 3 at 87 % AICore
    lines = (NPU_SMI / "atlas-800t-a2-910b3.txt").read_text().splitlines()
    row = next(i for i, ln in enumerate(lines) if "0000:82:00.0" in ln)
    lines[row] = lines[row].replace("| 0           0    / 0", "| 87          0    / 0")
    busy.write_text("\n".join(lines) + "\n")
    clock = [0.0]
    reading = NpuSmi(npu_smi_tool(tmp_path, busy), max_age_s=5, clock=lambda: clock[0])
    fake_proc(tmp_path / "proc", 7, {"SLURM_JOB_ID": "9", "ASCEND_RT_VISIBLE_DEVICES": "2,3"})
    src = NpuSmiSource(proc=tmp_path / "proc", npu_smi=reading)
    assert src.sample() == {9: 43.5}
    assert [d.index for d in NpuSmiHealth(reading).devices()] == list(range(8))
    assert (tmp_path / "runs").read_text().count("run") == 1
    clock[0] = 6.0  # the next interval reads afresh
    src.sample()
    assert (tmp_path / "runs").read_text().count("run") == 2


def test_a_failing_npu_smi_is_no_samples_and_a_health_probe_error(tmp_path: Path) -> None:
    reading = NpuSmi(npu_smi_tool(tmp_path, NPU_SMI / "atlas-800t-a2-910b3.txt", rc=3))
    fake_proc(tmp_path / "proc", 7, {"SLURM_JOB_ID": "9", "ASCEND_RT_VISIBLE_DEVICES": "0"})
    assert NpuSmiSource(proc=tmp_path / "proc", npu_smi=reading).sample() == {}
    with pytest.raises(ProbeError, match="exit code 3"):
        NpuSmiHealth(reading).devices()
    missing = NpuSmi((str(tmp_path / "absent"),))
    assert NpuSmiSource(proc=tmp_path / "proc", npu_smi=missing).sample() == {}
    assert NpuSmiHealth(missing).devices() == ()


def test_power_per_job_from_nvml_and_npu_smi(tmp_path: Path) -> None:
    fake_proc(tmp_path, 5, {"SLURM_JOB_ID": "3", "CUDA_VISIBLE_DEVICES": "1"})
    fake_proc(tmp_path, 6, {"SLURM_JOB_ID": "4", "CUDA_VISIBLE_DEVICES": "0,2"})
    src = NvmlSource(proc=tmp_path, nvml=FakeNvml())
    src.sample()
    # card 1 reports no power: job 3's energy is unknown, not zero
    assert src.watts == {4: 250.5}
    fake_proc(tmp_path / "proc", 7, {"SLURM_JOB_ID": "9", "ASCEND_RT_VISIBLE_DEVICES": "2,3"})
    table = NPU_SMI / "atlas-800t-a2-910b3.txt"
    npu = NpuSmiSource(proc=tmp_path / "proc", npu_smi=NpuSmi(npu_smi_tool(tmp_path, table)))
    npu.sample()
    power = {d.index: d.power_w for d in npu_samples(table.read_text())}
    assert npu.watts == {9: pytest.approx((power[2] or 0) + (power[3] or 0))}
    assert npu.watts[9] > 0


def test_lab_cards_draw_made_up_power_marked_fake() -> None:
    assert cards_in({"CUDA_VISIBLE_DEVICES": "0,1", "ASCEND_RT_VISIBLE_DEVICES": ""}) == 2
    assert cards_in({"HOME": "/root"}) == 0
    assert fake_watts(2, 50.0) == 2 * (60 + 120)
    assert fake_watts(1, 150.0) == 300.0
    assert LabSource.power == "fake"


def test_sample_lines_carry_watts_and_where_they_came_from(tmp_path: Path) -> None:
    write_samples(tmp_path, "gpu1", {7: 50.0, 8: 0.0}, 100.0, watts={7: 180.04}, power="fake")
    lines = [json.loads(x) for x in (tmp_path / "gpu1.jsonl").read_text().splitlines()]
    assert lines == [
        {"ts": 100.0, "job": 7, "util": 50.0, "node": "gpu1", "watts": 180.0, "power": "fake"},
        {"ts": 100.0, "job": 8, "util": 0.0, "node": "gpu1"},
    ]
