"""Parse what the SMI tools of Cambricon MLUs, Hygon DCUs and Kunlunxin XPUs print.

* ``cnmon info`` (Cambricon) has no machine-readable mode: a ``Card <n>`` line per card, then
  indented ``Key : value`` lines grouped in sections (``Physical Memory Usage``, ``Power`` …).
* ``hy-smi --json`` (Hygon, a ROCm SMI derivative) prints one JSON object keyed ``card<n>``;
  it is read with :mod:`json`. Some releases print a line of text around the object, so the
  object is taken from the first ``{`` to the last ``}``.
* ``xpu-smi -q`` (Kunlunxin) prints an ``XPU <bus id>`` block per card in the style of
  ``nvidia-smi -q``: section headers without a colon, ``Key : value`` lines below them.

Samples of each are kept under ``tests/data/{cnmon,hy-smi,xpu-smi}/``. Output that has none of
the expected blocks, or a card without its name or memory size, raises :class:`SmiFormatError`:
a probe that guessed would render a node with the wrong cards.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gres.naming import GRES_TYPE_RE

_MIB = 1024 * 1024


class SmiFormatError(ValueError):
    """The tool's output is not in the format this parser knows."""


@dataclass(frozen=True, slots=True)
class AccelCard:
    """One card as its SMI tool reports it; figures the tool does not print are None."""

    kind: str  # "mlu", "dcu" or "xpu"
    index: int  # the N of the card's device file and of its runtime's visibility variable
    name: str  # as printed: "MLU370-X4", "K100_AI", "P800 PCIe"
    model: str  # Slurm GRES type: "mlu370", "k100_ai", "p800"
    memory_total_mib: int
    memory_used_mib: int | None = None
    util_percent: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    #: the tool's word for the card's state ("Good" in cnmon); "" where it prints none
    health: str = ""
    #: uncorrectable ECC errors since the driver loaded, where the tool counts them
    ecc_uncorrected: int | None = None


def normalise_accel_model(name: str) -> str:
    """Product name → Slurm GRES type: lower case, packaging words dropped, and for
    Cambricon the board suffix (``MLU370-X4`` and ``-S4`` are one chip) → ``mlu370``."""
    words = [w for w in name.lower().split() if w not in {"pcie", "oam", "sxm"}]
    base = words[0] if words else ""
    if base.startswith("mlu"):
        base = base.split("-")[0]
    cleaned = re.sub(r"[^a-z0-9_-]", "", base)[:32]
    return cleaned if GRES_TYPE_RE.match(cleaned) else ""


def _figure(value: str | None) -> float | None:
    """``"46 C"``, ``"76.00 W"``, ``"66 %"`` → the number; ``N/A`` and the like → None."""
    if value is None:
        return None
    match = re.match(r"^\s*(-?\d+(?:\.\d+)?)", value)
    return float(match.group(1)) if match else None


def _mib(value: str | None, what: str) -> int:
    number = _figure(value)
    if number is None or number < 0:
        raise SmiFormatError(f"{what}: no memory size in {value!r}")
    return int(number)


def _sections(lines: list[str]) -> dict[str, str]:
    """Indented ``Key : value`` lines → ``{"Section/Key": value}``; a line without a value
    (``Power :`` or ``Memory Usage``) opens a section for the lines indented below it."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, colon, value = line.strip().partition(":")
        key, value = key.strip(), value.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([*(name for _, name in stack), key])
        if not colon or not value:
            stack.append((indent, key))
        else:
            out.setdefault(path, value)
    return out


def _blocks(text: str, header: re.Pattern[str]) -> list[tuple[re.Match[str], list[str]]]:
    """The lines under each header line, the header's match first."""
    blocks: list[tuple[re.Match[str], list[str]]] = []
    for line in text.splitlines():
        match = header.match(line.rstrip())
        if match:
            blocks.append((match, []))
        elif blocks:
            blocks[-1][1].append(line)
    return blocks


# --- cnmon ------------------------------------------------------------------------------------

_CNMON_CARD = re.compile(r"^Card\s+(\d+)$")


def parse_cnmon_info(text: str) -> list[AccelCard]:
    """The cards of ``cnmon info``, in the order printed; ``Card <n>`` is ``/dev/cambricon_dev<n>``
    and the number ``MLU_VISIBLE_DEVICES`` takes."""
    if not text.strip():
        return []
    blocks = _blocks(text, _CNMON_CARD)
    if not blocks:
        raise SmiFormatError("cnmon info: no 'Card <n>' block in the output")
    cards = []
    for match, lines in blocks:
        index = int(match.group(1))
        fields = _sections(lines)
        what = f"cnmon info card {index}"
        name = fields.get("Product Name", "")
        if not name:
            raise SmiFormatError(f"{what}: no Product Name")
        health = fields.get("Health State/Device", "")
        cards.append(
            AccelCard(
                kind="mlu",
                index=index,
                name=name,
                model=normalise_accel_model(name) or "mlu",
                memory_total_mib=_mib(fields.get("Physical Memory Usage/Total"), what),
                memory_used_mib=_int_or_none(fields.get("Physical Memory Usage/Used")),
                util_percent=_figure(fields.get("Utilization/MLU Average")),
                power_w=_figure(fields.get("Power/Usage")),
                temperature_c=_figure(
                    fields.get("Temperature/Chip") or fields.get("Temperature/Board")
                ),
                health=health,
            )
        )
    return cards


def _int_or_none(value: str | None) -> int | None:
    number = _figure(value)
    return None if number is None else int(number)


# --- hy-smi -----------------------------------------------------------------------------------

_HY_CARD = re.compile(r"^card(\d+)$")


def _first(card: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = card.get(key)
        if value is not None:
            return str(value)
    return None


def parse_hy_smi_json(text: str) -> list[AccelCard]:
    """The cards of ``hy-smi … --json``, by card number; ``card<n>`` is the n-th DCU HIP
    enumerates (``HIP_VISIBLE_DEVICES``) and ``/dev/dri/renderD<128+n>``."""
    if not text.strip():
        return []
    start, end = text.find("{"), text.rfind("}")
    if start < 0:
        raise SmiFormatError("hy-smi --json: no JSON object in the output")
    try:
        data = json.loads(text[start : end + 1] if end > start else text[start:])
    except json.JSONDecodeError as exc:
        raise SmiFormatError(f"hy-smi --json: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SmiFormatError("hy-smi --json: no JSON object in the output")
    cards = []
    for key, card in data.items():
        match = _HY_CARD.match(key)
        if not match:
            continue  # "system" and other summaries
        index = int(match.group(1))
        what = f"hy-smi card{index}"
        if not isinstance(card, dict):
            raise SmiFormatError(f"{what}: not a JSON object")
        name = _first(card, "Card Series", "Card series", "Card model") or ""
        if not name:
            raise SmiFormatError(f"{what}: no Card Series")
        total = _first(card, "vram Total Memory (MiB)")
        used = _first(card, "vram Total Used Memory (MiB)")
        if total is None and (total_b := _figure(_first(card, "VRAM Total Memory (B)"))):
            total = str(int(total_b) // _MIB)
            used_b = _figure(_first(card, "VRAM Total Used Memory (B)"))
            used = None if used_b is None else str(int(used_b) // _MIB)
        cards.append(
            AccelCard(
                kind="dcu",
                index=index,
                name=name,
                model=normalise_accel_model(name) or "dcu",
                memory_total_mib=_mib(total, what),
                memory_used_mib=_int_or_none(used),
                util_percent=_figure(_first(card, "HCU use (%)", "DCU use (%)", "GPU use (%)")),
                power_w=_figure(
                    _first(
                        card,
                        "Average Graphics Package Power (W)",
                        "Current Socket Graphics Package Power (W)",
                    )
                ),
                temperature_c=_figure(
                    _first(
                        card, "Temperature (Sensor junction) (C)", "Temperature (Sensor edge) (C)"
                    )
                ),
            )
        )
    if not cards:
        raise SmiFormatError("hy-smi --json: no 'card<n>' entry in the output")
    return sorted(cards, key=lambda c: c.index)


# --- xpu-smi ----------------------------------------------------------------------------------

_XPU_BLOCK = re.compile(r"^XPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$")


def parse_xpu_smi_query(text: str) -> list[AccelCard]:
    """The cards of ``xpu-smi -q``, by minor number (``/dev/xpu<minor>``, the number
    ``XPU_VISIBLE_DEVICES`` takes)."""
    if not text.strip():
        return []
    blocks = _blocks(text, _XPU_BLOCK)
    if not blocks:
        raise SmiFormatError("xpu-smi -q: no 'XPU <bus id>' block in the output")
    cards = []
    for match, lines in blocks:
        fields = _sections(lines)
        what = f"xpu-smi -q XPU {match.group(1)}"
        name = fields.get("Product Name", "")
        minor = fields.get("Minor Number", "")
        if not name:
            raise SmiFormatError(f"{what}: no Product Name")
        if not minor.isdigit():
            raise SmiFormatError(f"{what}: no Minor Number")
        cards.append(
            AccelCard(
                kind="xpu",
                index=int(minor),
                name=name,
                model=normalise_accel_model(name) or "xpu",
                memory_total_mib=_mib(fields.get("Memory Usage/Total"), what),
                memory_used_mib=_int_or_none(fields.get("Memory Usage/Used")),
                util_percent=_figure(fields.get("Utilization/Xpu")),
                power_w=_figure(fields.get("Power Readings/Power Draw")),
                temperature_c=_figure(fields.get("Temperature/XPU Current Temp")),
                ecc_uncorrected=_int_or_none(fields.get("ECC Errors/Volatile/DRAM Uncorrectable")),
            )
        )
    return sorted(cards, key=lambda c: c.index)
