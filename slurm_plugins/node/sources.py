"""Where the node agent's per-job utilisation comes from.

Sources: NVML where there are GPUs, ``npu-smi`` on Ascend nodes (both through the device
probes of :mod:`gres.probe`), a file-fed source (``<dir>/<job id>`` holding a percentage),
and the lab's: its cards are device files with no load, so a job's own CPU load on the node
stands in for it (a file still overrides). Jobs are mapped to devices through
``/proc/<pid>/environ`` (``SLURM_JOB_ID`` with ``CUDA_VISIBLE_DEVICES`` or
``ASCEND_RT_VISIBLE_DEVICES``), so a job holding a card it does not use still reports 0 %.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from gres.accel import SOURCE_NAMES, accel_samples
from gres.accel import tool as accel_tool
from gres.device import DeviceSample
from gres.errors import ProbeError
from gres.naming import ACCEL_VARIABLES
from gres.probe import gpu_samples, npu_samples, run_npu_smi
from gres.smi import run_smi

log = logging.getLogger("aipool.node")


class Source(Protocol):
    #: the cards the last ``sample()`` read (for the agent's metrics); none where the source
    #: reads no driver (the lab's and file sources)
    devices: tuple[DeviceSample, ...]

    def sample(self) -> dict[int, float]:
        """Utilisation in percent per job id running on this node."""
        ...


class FileSource:
    """Lab source: ``<dir>/<job id>`` files each holding a utilisation percentage."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.devices: tuple[DeviceSample, ...] = ()

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
    counted (the agent sees the jobs it runs as, or all of them as root).

    The fake cards draw no power, so their draw is made up from the load (:func:`fake_watts`)
    and marked ``fake`` in the samples and in accounting."""

    power = "fake"

    def __init__(self, node: str, directory: Path) -> None:
        self.node = node
        self.files = FileSource(directory)
        self.devices: tuple[DeviceSample, ...] = ()
        self.watts: dict[int, float] = {}
        self._last: dict[int, tuple[float, float]] = {}  # job -> (CPU seconds, monotonic time)
        self._cards: dict[int, int] = {}

    def _cpu(self) -> tuple[dict[int, float], dict[int, int]]:
        import psutil

        seconds: dict[int, float] = {}
        cpus: dict[int, int] = {}
        self._cards = {}
        for proc in psutil.process_iter(["environ", "cpu_times"]):
            env, times = proc.info["environ"], proc.info["cpu_times"]
            if not env or times is None or env.get("SLURMD_NODENAME") != self.node:
                continue
            job, given = env.get("SLURM_JOB_ID", ""), env.get("SLURM_CPUS_ON_NODE", "")
            if not job.isdigit():
                continue
            seconds[int(job)] = seconds.get(int(job), 0.0) + times.user + times.system
            cpus[int(job)] = max(cpus.get(int(job), 1), int(given) if given.isdigit() else 1)
            self._cards[int(job)] = max(self._cards.get(int(job), 0), cards_in(env))
        return seconds, cpus

    def sample(self) -> dict[int, float]:
        out = self._sample()
        self.watts = {
            j: fake_watts(self._cards[j], u) for j, u in out.items() if self._cards.get(j)
        }
        return out

    def _sample(self) -> dict[int, float]:
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


#: The lab's made-up card: this many watts idle, up to FAKE_IDLE_W + FAKE_SPAN_W at 100 %.
FAKE_IDLE_W = 60.0
FAKE_SPAN_W = 240.0
_VISIBLE = ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")


def cards_in(env: Mapping[str, str]) -> int:
    """How many cards a process sees, from the runtimes' visibility variables."""
    return max(len([x for x in env.get(v, "").split(",") if x.strip()]) for v in _VISIBLE)


def fake_watts(cards: int, util: float) -> float:
    """The lab's stand-in power draw of ``cards`` fake cards at ``util`` percent."""
    return cards * (FAKE_IDLE_W + FAKE_SPAN_W * min(max(util, 0.0), 100.0) / 100.0)


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


def per_job_watts(
    devices: Sequence[DeviceSample], jobs: Mapping[int, set[int]]
) -> dict[int, float]:
    """A job's power draw: the sum over its cards; a job none of whose cards reports power
    is left out (its energy is unknown, not zero)."""
    power = {s.index: s.power_w for s in devices if s.power_w is not None}
    return {
        job: sum(power[i] for i in devs if i in power)
        for job, devs in jobs.items()
        if any(i in power for i in devs)
    }


def utilisation(samples: Sequence[DeviceSample]) -> dict[int, float]:
    """Utilisation per device index; a device that reports none is left out (0 % then)."""
    return {s.index: s.util_percent for s in samples if s.util_percent is not None}


def jobs_on(
    devices: Sequence[DeviceSample], variable: str, proc: Path
) -> tuple[dict[int, float], dict[int, float]]:
    """Each job's mean utilisation over its devices and its cards' power draw; none at all
    when the probe saw no device: a driver that is down must not make every job look idle to
    the reaper."""
    if not devices:
        return {}, {}
    jobs = proc_jobs(variable, proc)
    return per_job(utilisation(devices), jobs), per_job_watts(devices, jobs)


class NvmlSource:
    """GPU utilisation from NVML (``nvidia-ml-py``, :func:`gres.probe.gpu_samples`)."""

    def __init__(self, proc: Path = Path("/proc"), nvml: Any = None) -> None:
        self.proc = proc
        self.nvml = nvml
        self.devices: tuple[DeviceSample, ...] = ()
        self.watts: dict[int, float] = {}

    def sample(self) -> dict[int, float]:
        try:
            self.devices = gpu_samples(self.nvml)
        except ProbeError as exc:
            log.warning("%s", exc)
            self.devices, self.watts = (), {}
            return {}
        util, self.watts = jobs_on(self.devices, "CUDA_VISIBLE_DEVICES", self.proc)
        return util


class SmiReading:
    """A tool's output read at most once per ``max_age_s``: the utilisation source and the
    health probe of one agent share a reading instead of running the tool twice."""

    def __init__(
        self,
        argv: tuple[str, ...],
        *,
        max_age_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.argv = argv
        self.max_age = max_age_s
        self.clock = clock
        self._read: tuple[float, str | None] | None = None

    def run(self) -> str | None:
        return run_smi(self.argv)

    def text(self) -> str | None:
        """The output; None without the tool. Raises :class:`ProbeError` when it fails (the
        failure is not kept: the next call runs the tool again)."""
        now = self.clock()
        if self._read is None or now - self._read[0] >= self.max_age:
            self._read = None
            self._read = (now, self.run())
        return self._read[1]


class NpuSmi(SmiReading):
    """``npu-smi info``, read at most once per ``max_age_s``."""

    def __init__(
        self,
        argv: tuple[str, ...] = ("npu-smi",),
        *,
        max_age_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(argv, max_age_s=max_age_s, clock=clock)

    def run(self) -> str | None:
        return run_npu_smi(self.argv)


class NpuSmiSource:
    """Ascend AICore utilisation from ``npu-smi info`` (:func:`gres.probe.npu_samples`)."""

    def __init__(self, proc: Path = Path("/proc"), npu_smi: NpuSmi | None = None) -> None:
        self.proc = proc
        self.npu_smi = npu_smi or NpuSmi()
        self.devices: tuple[DeviceSample, ...] = ()
        self.watts: dict[int, float] = {}

    def sample(self) -> dict[int, float]:
        try:
            text = self.npu_smi.text()
        except ProbeError as exc:
            log.warning("%s", exc)
            self.devices, self.watts = (), {}
            return {}
        self.devices = npu_samples(text) if text is not None else ()
        util, self.watts = jobs_on(self.devices, "ASCEND_RT_VISIBLE_DEVICES", self.proc)
        return util


class AccelSmi(SmiReading):
    """One reading of an MLU, DCU or XPU tool (``cnmon``, ``hy-smi``, ``xpu-smi``) at most
    once per ``max_age_s``, shared by the utilisation source and the health probe."""

    def __init__(
        self,
        kind: str,
        argv: tuple[str, ...] | None = None,
        *,
        max_age_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(accel_tool(kind, argv).argv, max_age_s=max_age_s, clock=clock)
        self.kind = kind


class AccelSmiSource:
    """MLU, DCU or XPU utilisation per job, matched through the runtime's visibility variable
    (``MLU_VISIBLE_DEVICES``, ``HIP_VISIBLE_DEVICES``, ``XPU_VISIBLE_DEVICES``)."""

    def __init__(self, smi: AccelSmi, proc: Path = Path("/proc")) -> None:
        self.smi = smi
        self.proc = proc
        self.devices: tuple[DeviceSample, ...] = ()
        self.watts: dict[int, float] = {}

    def sample(self) -> dict[int, float]:
        try:
            text = self.smi.text()
            self.devices = accel_samples(self.smi.kind, text) if text is not None else ()
        except ProbeError as exc:
            log.warning("%s", exc)
            self.devices, self.watts = (), {}
            return {}
        util, self.watts = jobs_on(self.devices, ACCEL_VARIABLES[self.smi.kind], self.proc)
        return util


def source(
    spec: str,
    node: str = "",
    *,
    npu_smi: NpuSmi | None = None,
    accel_smi: AccelSmi | None = None,
) -> Source:
    """``nvml``, ``npu-smi``, ``cnmon``, ``hy-smi``, ``xpu-smi``, ``file:DIR`` or ``lab:DIR``
    (the lab node ``node``)."""
    if spec.startswith("lab:"):
        if not node:
            raise ValueError("the lab source needs the node's name (--node)")
        return LabSource(node, Path(spec[4:]))
    if spec == "nvml":
        return NvmlSource()
    if spec == "npu-smi":
        return NpuSmiSource(npu_smi=npu_smi)
    if spec in SOURCE_NAMES:
        return AccelSmiSource(accel_smi or AccelSmi(SOURCE_NAMES[spec]))
    if spec.startswith("file:"):
        return FileSource(Path(spec[5:]))
    raise ValueError(
        f"unknown sample source {spec!r}: use nvml, npu-smi, cnmon, hy-smi, xpu-smi, "
        "file:DIR or lab:DIR"
    )
