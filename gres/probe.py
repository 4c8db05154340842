"""Probe the local host: NVIDIA GPUs through NVML, Ascend NPUs through ``npu-smi`` (MLU, DCU and
XPU cards through :mod:`gres.accel`), CPUs, memory;
and each accelerator's load (utilisation, memory, power, temperature) and health now.

The probes are the only I/O in this package. Each takes what it talks to as an argument (the
``pynvml`` module, the ``npu-smi`` argv, the ``/proc`` directory) so tests inject fakes and
recorded output instead of patching globals. A host without a driver or tool has no such
devices; a driver that is present but fails half-way raises :class:`ProbeError`, because a node
rendered with fewer devices than it has would strand the rest.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gres.accel import probe_accels
from gres.device import DeviceHealth, DeviceSample
from gres.errors import ProbeError
from gres.inventory import Accel, Gpu, NodeInventory, Npu
from gres.naming import DEFAULT_DEVICE_DIR, GRES_TYPE_RE, NODE_NAME_RE, gpu_device, npu_device
from gres.npusmi import parse_npu_smi_info
from gres.smi import SMI_TIMEOUT, run_smi

try:
    import pynvml as _pynvml
except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency, but probe without it
    _pynvml = None

NPU_SMI_TIMEOUT = SMI_TIMEOUT
_MIB = 1024 * 1024
#: Words in NVML product names that are brand or packaging, not the model.
_BRANDS = {"nvidia", "tesla", "geforce", "quadro"}
_PACKAGING = re.compile(r"^(\d+gb|pcie|sxm\d*|nvl|hbm\d*e?|generation|oam)$", re.I)


# --- NVIDIA ------------------------------------------------------------------------------------


def normalise_gpu_model(name: str) -> str:
    """NVML product name → Slurm GRES type.

    ``NVIDIA A100-SXM4-40GB`` → ``a100``, ``Tesla V100-SXM2-16GB`` → ``v100``, ``NVIDIA H100 80GB
    HBM3`` → ``h100``, ``NVIDIA GeForce RTX 4090`` → ``rtx4090``, ``NVIDIA L40S`` → ``l40s``.
    Brand words and memory/packaging suffixes are dropped: jobs ask for a card model, and
    the same model in two packagings should not split the pool.
    """
    words = [w for w in name.replace("_", " ").split() if w.lower() not in _BRANDS]
    if "MIG" in words:  # "<card> MIG 1g.10gb" names a MIG slice of the card
        words = words[: words.index("MIG")]
    if words:
        words[0] = words[0].split("-")[0]  # A100-SXM4-40GB → A100
    kept = [w for w in words if not _PACKAGING.match(w)]
    model = re.sub(r"[^a-z0-9]", "", "".join(kept).lower())[:32]
    return model if GRES_TYPE_RE.match(model) else "gpu"


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def probe_gpus(nvml: Any = None, *, device_dir: str = DEFAULT_DEVICE_DIR) -> tuple[Gpu, ...]:
    """GPUs seen by NVML, by minor number (``/dev/nvidia<minor>``).

    ``nvml`` is the ``pynvml`` module (nvidia-ml-py) or a stand-in with the same functions.
    No NVML library or no driver means no GPUs.
    """
    nvml = _pynvml if nvml is None else nvml
    if nvml is None:
        return ()
    try:
        nvml.nvmlInit()
    except (nvml.NVMLError, OSError):
        return ()
    try:
        gpus = [_read_gpu(nvml, i, device_dir) for i in range(nvml.nvmlDeviceGetCount())]
    except nvml.NVMLError as exc:
        raise ProbeError(f"NVML found GPUs but could not read them: {exc}") from exc
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
    return tuple(sorted(gpus, key=lambda g: g.index))


def _read_gpu(nvml: Any, i: int, device_dir: str) -> Gpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(i)
    minor = int(nvml.nvmlDeviceGetMinorNumber(handle))
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
        mig = current == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)
    except nvml.NVMLError:  # NotSupported on cards without MIG
        mig = False
    return Gpu(
        index=minor,
        model=normalise_gpu_model(_text(nvml.nvmlDeviceGetName(handle))),
        memory_mib=int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // _MIB,
        device=gpu_device(device_dir, minor),
        uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        mig=mig,
    )


# --- Ascend ------------------------------------------------------------------------------------


def run_npu_smi(
    npu_smi: Sequence[str] = ("npu-smi",), timeout: float = NPU_SMI_TIMEOUT
) -> str | None:
    """Text of ``npu-smi info``; None when the tool is not installed (no Ascend driver)."""
    return run_smi([*npu_smi, "info"], timeout)


def probe_npus(
    npu_smi: Sequence[str] = ("npu-smi",),
    *,
    device_dir: str = DEFAULT_DEVICE_DIR,
    timeout: float = NPU_SMI_TIMEOUT,
) -> tuple[Npu, ...]:
    """Ascend NPU chips, one :class:`Npu` per ``/dev/davinci<N>``; none without ``npu-smi``."""
    text = run_npu_smi(npu_smi, timeout)
    if text is None:
        return ()
    npus: dict[int, Npu] = {}
    for chip in parse_npu_smi_info(text):
        npus.setdefault(
            chip.device_id,
            Npu(
                index=chip.device_id,
                model=chip.model,
                device=npu_device(device_dir, chip.device_id),
                memory_mib=chip.capacity_mib,
            ),
        )
    return tuple(npus[i] for i in sorted(npus))


# --- CPU and memory ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CpuTopology:
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int


def parse_cpuinfo(text: str, fallback_cpus: int | None = None) -> CpuTopology:
    """Sockets, cores and threads from ``/proc/cpuinfo``.

    x86 lists ``physical id`` and ``core id`` per logical CPU; many ARM kernels list neither,
    and then the host counts as one socket of single-threaded cores, which Slurm accepts.
    """
    processors = 0
    sockets: set[str] = set()
    cores: set[tuple[str, str]] = set()
    physical = core = None
    for line in [*text.splitlines(), ""]:
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            processors += 1
        elif key == "physical id":
            physical = value
        elif key == "core id":
            core = value
        elif not key:  # blank line ends one logical CPU's block
            if physical is not None:
                sockets.add(physical)
                if core is not None:
                    cores.add((physical, core))
            physical = core = None
    cpus = processors or fallback_cpus or 1
    n_sockets = len(sockets) or 1
    n_cores = len(cores) or cpus
    if n_cores % n_sockets or cpus % n_cores:
        return CpuTopology(cpus, 1, cpus, 1)
    return CpuTopology(cpus, n_sockets, n_cores // n_sockets, cpus // n_cores)


def parse_meminfo(text: str) -> int:
    """``MemTotal`` of ``/proc/meminfo`` in MiB (Slurm's RealMemory unit)."""
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.M)
    if match is None:
        raise ProbeError("no MemTotal line in /proc/meminfo")
    return int(match[1]) // 1024


def probe_cpu(proc_dir: str | os.PathLike[str] = "/proc") -> tuple[CpuTopology, int]:
    """CPU topology and memory (MiB) of this host."""
    proc = Path(proc_dir)
    try:
        cpuinfo = (proc / "cpuinfo").read_text(encoding="utf-8", errors="replace")
        meminfo = (proc / "meminfo").read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ProbeError(f"cannot read CPU and memory information: {exc}") from exc
    return parse_cpuinfo(cpuinfo, os.cpu_count()), parse_meminfo(meminfo)


# --- the host --------------------------------------------------------------------------------


def probe_host(
    name: str | None = None,
    *,
    nvml: Any = None,
    npu_smi: Sequence[str] = ("npu-smi",),
    device_dir: str = DEFAULT_DEVICE_DIR,
    proc_dir: str | os.PathLike[str] = "/proc",
    timeout: float = NPU_SMI_TIMEOUT,
    accel_argvs: Mapping[str, Sequence[str]] | None = None,
) -> NodeInventory:
    """This host as one inventory node; a host without accelerators is a CPU-only node.
    ``accel_argvs`` runs the MLU/DCU/XPU tools by another argv (see :mod:`gres.accel`)."""
    node_name = name or socket.gethostname().split(".")[0]
    if not NODE_NAME_RE.match(node_name):
        raise ProbeError(f"{node_name!r} is not a valid Slurm node name; give one with --name")
    topology, memory_mb = probe_cpu(proc_dir)
    return NodeInventory(
        name=node_name,
        cpus=topology.cpus,
        sockets=topology.sockets,
        cores_per_socket=topology.cores_per_socket,
        threads_per_core=topology.threads_per_core,
        memory_mb=memory_mb,
        gpus=probe_gpus(nvml, device_dir=device_dir),
        npus=probe_npus(npu_smi, device_dir=device_dir, timeout=timeout),
        accels=_probe_accels(accel_argvs, device_dir, timeout),
    )


def _probe_accels(
    argvs: Mapping[str, Sequence[str]] | None, device_dir: str, timeout: float
) -> tuple[Accel, ...]:
    return probe_accels(argvs, device_dir=device_dir, timeout=timeout)


# --- load --------------------------------------------------------------------------------------


def gpu_samples(nvml: Any = None) -> tuple[DeviceSample, ...]:
    """The load of every GPU NVML lists, by minor number. A figure a card does not report
    is None; a card that cannot be opened is left out (its health says why); no NVML or no
    driver means no GPUs; a driver that cannot count its cards raises :class:`ProbeError`."""
    nvml = _pynvml if nvml is None else nvml
    if nvml is None:
        return ()
    try:
        nvml.nvmlInit()
    except (nvml.NVMLError, OSError):
        return ()
    try:
        count = nvml.nvmlDeviceGetCount()
        found = (s for i in range(count) if (s := _gpu_sample(nvml, i)) is not None)
        return tuple(sorted(found, key=lambda s: s.index))
    except nvml.NVMLError as exc:
        raise ProbeError(f"NVML could not count the GPUs: {exc}") from exc
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def _gpu_sample(nvml: Any, i: int) -> DeviceSample | None:
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        minor = int(nvml.nvmlDeviceGetMinorNumber(handle))
    except nvml.NVMLError:
        return None

    def read(call: str, *args: Any) -> Any:
        try:
            return getattr(nvml, call)(handle, *args)
        except nvml.NVMLError:  # NotSupported on this card, or a read that failed now
            return None

    util, memory = read("nvmlDeviceGetUtilizationRates"), read("nvmlDeviceGetMemoryInfo")
    power_mw = read("nvmlDeviceGetPowerUsage")
    temp = read("nvmlDeviceGetTemperature", getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
    return DeviceSample(
        "gpu",
        minor,
        util_percent=None if util is None else float(util.gpu),
        memory_used_mib=None if memory is None else int(memory.used) // _MIB,
        memory_total_mib=None if memory is None else int(memory.total) // _MIB,
        power_w=None if power_mw is None else power_mw / 1000,
        temperature_c=None if temp is None else float(temp),
    )


def npu_samples(text: str) -> tuple[DeviceSample, ...]:
    """The load of every chip in ``npu-smi info``, by device id."""
    out: dict[int, DeviceSample] = {}
    for chip in parse_npu_smi_info(text):
        out.setdefault(
            chip.device_id,
            DeviceSample(
                "npu",
                chip.device_id,
                util_percent=chip.aicore_percent,
                memory_used_mib=chip.used_mib,
                memory_total_mib=chip.capacity_mib,
                power_w=chip.power_w,
                temperature_c=chip.temperature_c,
            ),
        )
    return tuple(out[i] for i in sorted(out))


# --- health ----------------------------------------------------------------------------------


def gpu_health(nvml: Any = None) -> tuple[DeviceHealth, ...]:
    """Errors of each GPU NVML lists: a card it cannot open (lost, fallen off the bus),
    uncorrected ECC errors since the driver loaded, retired pages or remapped rows waiting
    for a reset, a failed row remap. Checks a card does not support are skipped; no NVML or
    no driver means no GPUs (the caller compares with how many the node should have)."""
    nvml = _pynvml if nvml is None else nvml
    if nvml is None:
        return ()
    try:
        nvml.nvmlInit()
    except (nvml.NVMLError, OSError):
        return ()
    try:
        return tuple(_gpu_health(nvml, i) for i in range(nvml.nvmlDeviceGetCount()))
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def _gpu_health(nvml: Any, i: int) -> DeviceHealth:
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        index = int(nvml.nvmlDeviceGetMinorNumber(handle))
    except nvml.NVMLError as exc:
        return DeviceHealth("gpu", i, errors=(f"cannot be opened: {exc}",))
    errors: list[str] = []
    warnings: list[str] = []

    def read(call: str, *args: Any) -> Any:
        try:
            return getattr(nvml, call)(handle, *args)
        except nvml.NVMLError as exc:
            if "not supported" not in str(exc).lower():
                warnings.append(f"{call}: {exc}")
            return None

    uncorrected = read(
        "nvmlDeviceGetTotalEccErrors",
        getattr(nvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1),
        getattr(nvml, "NVML_VOLATILE_ECC", 0),
    )
    ecc = None if uncorrected is None else int(uncorrected)
    if ecc:
        errors.append(f"{ecc} uncorrected ECC error(s)")
    if read("nvmlDeviceGetRetiredPagesPendingStatus") == getattr(nvml, "NVML_FEATURE_ENABLED", 1):
        errors.append("retired pages pending a reset")
    rows = read("nvmlDeviceGetRemappedRows")
    if rows is not None:
        _corrected, _uncorrected, pending, failed = rows
        if failed:
            errors.append("row remapping failed")
        elif pending:
            errors.append("remapped rows pending a reset")
    return DeviceHealth("gpu", index, tuple(errors), tuple(warnings), ecc)


def npu_health(text: str) -> tuple[DeviceHealth, ...]:
    """The Health column of ``npu-smi info`` per chip: ``OK`` is healthy, ``Warning`` a
    warning, anything else (``Alarm``, ``Critical``, ``UNKNOWN``…) an error."""
    out: dict[int, DeviceHealth] = {}
    for chip in parse_npu_smi_info(text):
        word = chip.health.strip()
        if word.upper() == "OK":
            health = DeviceHealth("npu", chip.device_id)
        elif word.lower() == "warning":
            health = DeviceHealth("npu", chip.device_id, warnings=(f"npu-smi health {word}",))
        else:
            health = DeviceHealth("npu", chip.device_id, errors=(f"npu-smi health {word}",))
        out.setdefault(chip.device_id, health)
    return tuple(out[i] for i in sorted(out))
