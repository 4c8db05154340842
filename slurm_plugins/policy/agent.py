"""The node agent: per-job accelerator utilisation samples for the idle reaper.

Each node runs ``aipool policy agent``; every interval it asks a *source* for the
utilisation of each job's devices and appends ``{"ts", "job", "util", "node"}`` lines to
``<samples dir>/<node>.jsonl`` (a shared directory). The daemon's :class:`SampleReader`
reads those files into the snapshot.

Sources: NVML (``pynvml``) where there are GPUs, ``npu-smi`` on Ascend nodes, a file-fed
source (``<dir>/<job id>`` holding a percentage), and the lab's: its cards are device files
with no load, so a job's own CPU load on the node stands in for it (a file still overrides).
Jobs are mapped to devices through ``/proc/<pid>/environ`` (``SLURM_JOB_ID`` with
``CUDA_VISIBLE_DEVICES`` or ``ASCEND_RT_VISIBLE_DEVICES``), so a job holding a card it does
not use still reports 0 %.

The agent also reports its node's health for ``aipool health``
(:mod:`slurm_plugins.health`): every accelerator's errors (NVML: ECC, pending page
retirement or row remaps, XID events, a card that cannot be opened; ``npu-smi``: the Health
column), the clock's synchronisation (``chronyc tracking``, else ``timedatectl``), network
and disk counters (psutil) — one ``<node>.health.json`` replaced atomically beside the
samples, whose format stays as it was. In the lab the devices come from the inventory and
a fault-injection file (:mod:`slurm_plugins.health.faults`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from slurm_plugins.health.node import (
    HealthReporter,
    InventoryHealth,
    NpuSmiHealth,
    NvmlHealth,
)
from slurm_plugins.health.report import write_report
from slurm_plugins.policy.snapshot import Sample

log = logging.getLogger("aipool.policy.agent")

#: Rewrite a samples file once it grows past this, keeping only recent lines.
MAX_FILE_BYTES = 1 << 20


class Source(Protocol):
    def sample(self) -> dict[int, float]:
        """Utilisation in percent per job id running on this node."""
        ...


class FileSource:
    """Lab source: ``<dir>/<job id>`` files each holding a utilisation percentage."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    def sample(self) -> dict[int, float]:
        out: dict[int, float] = {}
        if not self.dir.is_dir():
            return out
        for f in self.dir.iterdir():
            if f.name.isdigit():
                try:
                    out[int(f.name)] = float(f.read_text().strip())
                except (OSError, ValueError):
                    log.warning("unreadable utilisation file %s", f)
        return out


class LabSource:
    """Lab source: the CPU load of each job's processes on this lab node, in percent of the
    CPUs Slurm gave it (CPU seconds per wall second between two samples), standing in for the
    load of its fake cards; a job's ``<dir>/<job id>`` file, where one exists, overrides it so
    that a test or a demo can set an exact figure. A job is first reported on the sample after
    the one that first saw it. Processes whose environment this user may not read are not
    counted (the agent sees the jobs it runs as, or all of them as root)."""

    def __init__(self, node: str, directory: Path) -> None:
        self.node = node
        self.files = FileSource(directory)
        self._last: dict[int, tuple[float, float]] = {}  # job -> (CPU seconds, monotonic time)

    def _cpu(self) -> tuple[dict[int, float], dict[int, int]]:
        import psutil

        seconds: dict[int, float] = {}
        cpus: dict[int, int] = {}
        for proc in psutil.process_iter(["environ", "cpu_times"]):
            env, times = proc.info["environ"], proc.info["cpu_times"]
            if not env or times is None or env.get("SLURMD_NODENAME") != self.node:
                continue
            job, given = env.get("SLURM_JOB_ID", ""), env.get("SLURM_CPUS_ON_NODE", "")
            if not job.isdigit():
                continue
            seconds[int(job)] = seconds.get(int(job), 0.0) + times.user + times.system
            cpus[int(job)] = max(cpus.get(int(job), 1), int(given) if given.isdigit() else 1)
        return seconds, cpus

    def sample(self) -> dict[int, float]:
        now = time.monotonic()
        seconds, cpus = self._cpu()
        out: dict[int, float] = {}
        for job, total in seconds.items():
            before = self._last.get(job)
            if before is not None and now > before[1] and total >= before[0]:
                load = 100.0 * (total - before[0]) / (now - before[1]) / cpus[job]
                out[job] = round(min(100.0, load), 1)
        self._last = {job: (total, now) for job, total in seconds.items()}
        out.update(self.files.sample())
        return out


def proc_jobs(variable: str, proc: Path = Path("/proc")) -> dict[int, set[int]]:
    """Device indexes each Slurm job's processes see, from their environment."""
    out: dict[int, set[int]] = {}
    for d in proc.iterdir() if proc.is_dir() else ():
        if not d.name.isdigit():
            continue
        try:
            raw = (d / "environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        env = dict(
            item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item
        )
        job = env.get("SLURM_JOB_ID", "")
        devices = env.get(variable, "")
        if job.isdigit() and devices:
            idx = {int(x) for x in devices.split(",") if x.strip().isdigit()}
            out.setdefault(int(job), set()).update(idx)
    return out


def per_job(device_util: Mapping[int, float], jobs: Mapping[int, set[int]]) -> dict[int, float]:
    """A job's utilisation: the mean over its devices (a missing device counts 0 %)."""
    return {
        job: sum(device_util.get(i, 0.0) for i in devs) / len(devs)
        for job, devs in jobs.items()
        if devs
    }


class NvmlSource:
    """GPU utilisation from NVML (``nvidia-ml-py``)."""

    def __init__(self, proc: Path = Path("/proc")) -> None:
        import pynvml

        self.nvml: Any = pynvml
        self.proc = proc
        pynvml.nvmlInit()

    def sample(self) -> dict[int, float]:
        n = self.nvml
        util = {}
        for i in range(n.nvmlDeviceGetCount()):
            h = n.nvmlDeviceGetHandleByIndex(i)
            util[i] = float(n.nvmlDeviceGetUtilizationRates(h).gpu)
        return per_job(util, proc_jobs("CUDA_VISIBLE_DEVICES", self.proc))


_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")


def parse_aicore(text: str) -> dict[int, float]:
    """AICore % per device id from ``npu-smi info``.

    Each device has two rows: ``NPU Name | Health | …`` then ``Chip [Device] | Bus-Id |
    AICore(%) …``; the device id is the second number of the chip row where printed (A3,
    310 cards), else the NPU id.
    """
    out: dict[int, float] = {}
    npu_id: int | None = None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0] or not cells[0].split()[0].isdigit():
            continue
        first = cells[0].split()
        if not _BUS_ID.match(cells[1]):
            npu_id = int(first[0])
            continue
        usage = cells[2].split()
        if npu_id is None or not usage:
            continue
        try:
            value = float(usage[0])
        except ValueError:
            continue
        device = int(first[1]) if len(first) > 1 and first[1].isdigit() else npu_id
        out[device] = value
    return out


class NpuSmiSource:
    """Ascend AICore utilisation from ``npu-smi info``."""

    def __init__(self, proc: Path = Path("/proc"), argv: tuple[str, ...] = ("npu-smi", "info")):
        self.proc = proc
        self.argv = argv

    def sample(self) -> dict[int, float]:
        done = subprocess.run(
            list(self.argv), capture_output=True, text=True, timeout=30, check=False
        )
        if done.returncode != 0:
            log.warning("npu-smi failed: %s", done.stderr.strip())
            return {}
        return per_job(parse_aicore(done.stdout), proc_jobs("ASCEND_RT_VISIBLE_DEVICES", self.proc))


def source(spec: str, node: str = "") -> Source:
    """``nvml``, ``npu-smi``, ``file:DIR`` or ``lab:DIR`` (the lab node ``node``)."""
    if spec.startswith("lab:"):
        if not node:
            raise ValueError("the lab source needs the node's name (--node)")
        return LabSource(node, Path(spec[4:]))
    if spec == "nvml":
        return NvmlSource()
    if spec == "npu-smi":
        return NpuSmiSource()
    if spec.startswith("file:"):
        return FileSource(Path(spec[5:]))
    raise ValueError(f"unknown sample source {spec!r}: use nvml, npu-smi, file:DIR or lab:DIR")


def write_samples(
    out_dir: Path, node: str, samples: Mapping[int, float], now: float, keep_s: float = 3600
) -> Path:
    """Append one line per job to ``<out_dir>/<node>.jsonl`` (pruned when it grows)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{node}.jsonl"
    lines = [json.dumps({"ts": now, "job": j, "util": u, "node": node}) for j, u in samples.items()]
    if path.exists() and path.stat().st_size > MAX_FILE_BYTES:
        kept = [ln for ln in path.read_text().splitlines() if _ts(ln) >= now - keep_s]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(x + "\n" for x in kept))
        os.replace(tmp, path)
    if lines:
        with path.open("a") as f:
            f.write("".join(x + "\n" for x in lines))
    return path


def _ts(line: str) -> float:
    try:
        return float(json.loads(line).get("ts", 0))
    except (ValueError, AttributeError):
        return 0.0


class SampleReader:
    """The daemon's side: all nodes' samples of the last ``max_age`` seconds, per job."""

    def __init__(self, directory: Path, max_age_s: float = 3600) -> None:
        self.dir = Path(directory)
        self.max_age = max_age_s

    def read(self, now: float, jobs: Iterable[int] | None = None) -> dict[int, tuple[Sample, ...]]:
        wanted = set(jobs) if jobs is not None else None
        out: dict[int, list[Sample]] = {}
        for f in sorted(self.dir.glob("*.jsonl")) if self.dir.is_dir() else ():
            try:
                text = f.read_text()
            except OSError:
                continue
            for line in text.splitlines():
                try:
                    d = json.loads(line)
                    ts, job, util = float(d["ts"]), int(d["job"]), float(d["util"])
                except (ValueError, KeyError, TypeError):
                    continue
                if ts >= now - self.max_age and (wanted is None or job in wanted):
                    out.setdefault(job, []).append(Sample(ts, util))
        return {j: tuple(sorted(s, key=lambda x: x.ts)) for j, s in out.items()}


# --- node health ------------------------------------------------------------------------------


def health_reporter(
    source_spec: str, node: str, *, inventory: Path | None = None, faults: Path | None = None
) -> HealthReporter:
    """The node's health reporter; its devices are probed like its samples are: from the
    inventory and fault file (the lab) when given, NVML for ``nvml``, ``npu-smi`` for
    ``npu-smi``; with ``file:DIR`` or ``lab:DIR`` and no inventory only the clock and counters."""
    if inventory is not None:
        return HealthReporter(node, InventoryHealth(inventory, node, faults))
    if source_spec == "nvml":
        return HealthReporter(node, NvmlHealth())
    if source_spec == "npu-smi":
        return HealthReporter(node, NpuSmiHealth())
    return HealthReporter(node, None)


def report_health(out_dir: Path, reporter: HealthReporter) -> Path:
    """Replace ``<out_dir>/<node>.health.json`` with a fresh report."""
    return write_report(out_dir, reporter.report())
