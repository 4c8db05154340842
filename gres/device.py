"""What a host's driver says of one accelerator: its load now (:class:`DeviceSample`) and its
health (:class:`DeviceHealth`), the same for every kind. :mod:`gres.probe` reads them from NVML
and ``npu-smi``, :mod:`gres.accel` from the MLU, DCU and XPU tools."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeviceSample:
    """One accelerator's load now, as its driver reports it; None where it cannot say."""

    kind: str  # "gpu", "npu", "mlu", "dcu" or "xpu"
    index: int  # minor number (/dev/nvidia<N>), device id (/dev/davinci<N>), card number
    util_percent: float | None = None  # GPU: busy time; NPU: AICore
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    power_w: float | None = None
    temperature_c: float | None = None


#: XIDs that mean the card or its link is broken, not that a program crashed (NVIDIA's XID
#: catalogue: double-bit ECC, row-remap failure, NVLink, fallen off the bus, uncontained
#: ECC, GSP errors). Other XIDs (13, 31, 43, …) are an application's own faults.
FATAL_XIDS = frozenset({48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 121, 140})


@dataclass(frozen=True, slots=True)
class DeviceHealth:
    """One accelerator as its driver sees it: ``errors`` make the node unfit for work,
    ``warnings`` are worth telling but not draining for."""

    kind: str  # "gpu", "npu", "mlu", "dcu" or "xpu"
    index: int  # minor number (/dev/nvidia<N>), device id (/dev/davinci<N>), card number
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: uncorrected ECC errors since the driver loaded, where the card counts them (NVML)
    ecc_uncorrected: int | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def xid_problem(xid: int) -> tuple[str, bool]:
    """``(text, fatal)`` for an XID event of a card."""
    return f"xid {xid}", xid in FATAL_XIDS
