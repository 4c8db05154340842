"""Parse the table that ``npu-smi info`` prints on Ascend hosts.

``npu-smi`` has no machine-readable output for the device list, so the probe reads its table.
Each NPU (card) has a row ``| <npu id>  <name> | <health> | …`` followed by one row per chip
``| <chip id> [<phy id>] | <bus id> | <aicore> <memory used/total> [<hbm used/total>] |``.
Where the chip header says ``Chip  Phy-ID`` (Atlas A3) or ``Chip    Device`` (310 cards), the
second number is the device number of ``/dev/davinci<N>``; otherwise it is the NPU id. The
process table that follows the device table is ignored. Samples of every layout are kept under
``tests/data/npu-smi/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gres.naming import GRES_TYPE_RE

_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_USAGE = re.compile(r"(\d+)\s*/\s*(\d+)")


@dataclass(frozen=True, slots=True)
class NpuChip:
    """One chip of ``npu-smi info``: an NPU as Slurm and the Ascend runtime see it."""

    npu_id: int
    chip_id: int
    device_id: int  # N of /dev/davinciN
    name: str  # as printed: "910B3", "910A", "Ascend910"
    model: str  # Slurm GRES type: "910b", "910", "910c"
    health: str
    bus_id: str
    hbm_mib: int
    memory_mib: int  # the "Memory-Usage" total (DDR), 0 on cards without DDR

    @property
    def capacity_mib(self) -> int:
        """Device memory a job can use: HBM where the card has it, else its DDR."""
        return self.hbm_mib or self.memory_mib


def normalise_npu_model(name: str, *, a3_layout: bool = False) -> str:
    """npu-smi chip name → Slurm GRES type.

    ``910B1``…``910B4`` are the 910B family → ``910b``. The first-generation chips print
    ``910A``, ``910ProA``, ``910ProB``/``910B`` or ``910PremiumA`` → ``910``. Atlas A3 servers
    print ``Ascend910`` in the ``Chip  Phy-ID`` layout that only the 910_93 family (910C) has
    → ``910c``. 310 variants keep their family (``310p``, ``310b``, ``310``).
    """
    base = re.sub(r"\s+", "", name.strip().lower()).removeprefix("ascend")
    if re.fullmatch(r"910b\d", base):
        return "910b"
    if base == "910" and a3_layout:
        return "910c"
    if re.fullmatch(r"910(a|b|proa|prob|premiuma)?", base):
        return "910"
    for family in ("310p", "310b"):
        if re.fullmatch(rf"{family}\d*", base):
            return family
    cleaned = re.sub(r"[^a-z0-9_-]", "", base)[:32]
    return cleaned if GRES_TYPE_RE.match(cleaned) else "npu"


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|") or not stripped.endswith("|"):
        return None
    return [c.strip() for c in stripped[1:-1].split("|")]


def parse_npu_smi_info(text: str) -> list[NpuChip]:
    """All chips in the device table of ``npu-smi info``, in the order printed."""
    chips: list[NpuChip] = []
    card: tuple[int, str, str] | None = None  # npu id, name, health of the current card row
    has_device_column = False
    for line in text.splitlines():
        cells = _cells(line)
        if cells is None or len(cells) < 3:
            continue
        first = cells[0].split()
        if first[:1] == ["Chip"]:
            has_device_column = len(first) > 1  # "Chip  Phy-ID" / "Chip    Device"
            continue
        if first[:2] == ["NPU", "Chip"] or cells[1].startswith("Process id"):
            break  # the process table follows the device table
        if not first or not first[0].isdigit():
            continue
        if not _BUS_ID.match(cells[1]):
            # "| <npu id>  <name> | <health> | …": the card row that precedes its chips.
            if len(first) >= 2:
                card = (int(first[0]), " ".join(first[1:]), cells[1])
            continue
        if card is None or not all(t.isdigit() for t in first):
            continue
        npu_id, name, health = card
        chip_id = int(first[0])
        device_id = int(first[1]) if has_device_column and len(first) > 1 else npu_id
        usage = [int(total) for _, total in _USAGE.findall(cells[2])]
        chips.append(
            NpuChip(
                npu_id=npu_id,
                chip_id=chip_id,
                device_id=device_id,
                name=name,
                model=normalise_npu_model(name, a3_layout=has_device_column and "910" in name),
                health=health,
                bus_id=cells[1],
                memory_mib=usage[0] if usage else 0,
                hbm_mib=usage[1] if len(usage) > 1 else 0,
            )
        )
    return chips
