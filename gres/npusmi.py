"""Parse the table that ``npu-smi info`` prints on Ascend hosts.

``npu-smi`` has no machine-readable output for the device list, so the probe reads its table.
Each NPU (card) has a row ``| <npu id>  <name> | <health> | <power W> <temp C> <hugepages> |``
followed by one row per chip
``| <chip id> [<phy id>] | <bus id> | <aicore %> <memory used/total> [<hbm used/total>] |``
(on Atlas A3 the card row is repeated before each chip, with power ``-`` on the second).
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
    hbm_used_mib: int = 0
    memory_used_mib: int = 0
    #: AICore utilisation in percent; None where npu-smi prints none.
    aicore_percent: float | None = None
    #: The card's power draw and temperature (its row, shared by its chips); None if not shown.
    power_w: float | None = None
    temperature_c: float | None = None

    @property
    def capacity_mib(self) -> int:
        """Device memory a job can use: HBM where the card has it, else its DDR."""
        return self.hbm_mib or self.memory_mib

    @property
    def used_mib(self) -> int:
        """Of :attr:`capacity_mib`, how much is in use."""
        return self.hbm_used_mib if self.hbm_mib else self.memory_used_mib


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


def _number(token: str) -> float | None:
    """A figure of the table; ``-`` and ``NA`` (not measured) are None."""
    try:
        return float(token)
    except ValueError:
        return None


def _card_figures(cell: str) -> tuple[float | None, float | None]:
    """Power (W) and temperature (C) from a card row's third cell."""
    tokens = cell.split()
    power = _number(tokens[0]) if tokens else None
    temp = _number(tokens[1]) if len(tokens) > 1 else None
    return power, temp


def _aicore(cell: str) -> float | None:
    """AICore % from a chip row's third cell: its first figure, unless that already starts
    the memory usage (``used / total``)."""
    tokens = cell.split()
    if not tokens or (len(tokens) > 1 and tokens[1].startswith("/")) or "/" in tokens[0]:
        return None
    return _number(tokens[0])


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|") or not stripped.endswith("|"):
        return None
    return [c.strip() for c in stripped[1:-1].split("|")]


def parse_npu_smi_info(text: str) -> list[NpuChip]:
    """All chips in the device table of ``npu-smi info``, in the order printed."""
    chips: list[NpuChip] = []
    card: tuple[int, str, str, str] | None = None  # npu id, name, health, figures of a card row
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
                card = (int(first[0]), " ".join(first[1:]), cells[1], cells[2])
            continue
        if card is None or not all(t.isdigit() for t in first):
            continue
        npu_id, name, health, figures = card
        chip_id = int(first[0])
        device_id = int(first[1]) if has_device_column and len(first) > 1 else npu_id
        pairs = [(int(used), int(total)) for used, total in _USAGE.findall(cells[2])]
        power, temp = _card_figures(figures)
        chips.append(
            NpuChip(
                npu_id=npu_id,
                chip_id=chip_id,
                device_id=device_id,
                name=name,
                model=normalise_npu_model(name, a3_layout=has_device_column and "910" in name),
                health=health,
                bus_id=cells[1],
                memory_mib=pairs[0][1] if pairs else 0,
                hbm_mib=pairs[1][1] if len(pairs) > 1 else 0,
                memory_used_mib=pairs[0][0] if pairs else 0,
                hbm_used_mib=pairs[1][0] if len(pairs) > 1 else 0,
                aicore_percent=_aicore(cells[2]),
                power_w=power,
                temperature_c=temp,
            )
        )
    return chips
