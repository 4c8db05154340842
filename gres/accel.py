"""Probe Cambricon MLUs (``cnmon``), Hygon DCUs (``hy-smi``) and Kunlunxin XPUs (``xpu-smi``):
the cards a host has, their load and their health, all from one reading of each tool.

The tools' output formats are parsed in :mod:`gres.accelsmi`; running them is
:func:`gres.smi.run_smi`. The argv of each tool is an argument, so tests and the lab point it at
a script that prints recorded output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gres.accelsmi import (
    AccelCard,
    SmiFormatError,
    parse_cnmon_info,
    parse_hy_smi_json,
    parse_xpu_smi_query,
)
from gres.device import DeviceHealth, DeviceSample
from gres.errors import ProbeError
from gres.model import Accel
from gres.naming import ACCEL_KINDS, DEFAULT_DEVICE_DIR, accel_device
from gres.smi import SMI_TIMEOUT, run_smi


@dataclass(frozen=True, slots=True)
class AccelTool:
    """How to ask a host about one accelerator kind."""

    kind: str
    argv: tuple[str, ...]
    parse: Callable[[str], list[AccelCard]]


#: The tool of each kind with the arguments whose output :mod:`gres.accelsmi` reads.
TOOLS: Mapping[str, AccelTool] = {
    "mlu": AccelTool("mlu", ("cnmon", "info"), parse_cnmon_info),
    "dcu": AccelTool(
        "dcu",
        (
            "hy-smi",
            "--showproductname",
            "--showmeminfo",
            "vram",
            "--showuse",
            "--showpower",
            "--showtemp",
            "--json",
        ),
        parse_hy_smi_json,
    ),
    "xpu": AccelTool("xpu", ("xpu-smi", "-q"), parse_xpu_smi_query),
}
#: The word each kind's source is named by on the node agent's command line.
SOURCE_NAMES: Mapping[str, str] = {"cnmon": "mlu", "hy-smi": "dcu", "xpu-smi": "xpu"}


def tool(kind: str, argv: Sequence[str] | None = None) -> AccelTool:
    """The tool of ``kind``, run as ``argv`` (its usual arguments included) when given."""
    if kind not in TOOLS:
        raise ValueError(f"unknown accelerator kind {kind!r}: use one of {', '.join(ACCEL_KINDS)}")
    base = TOOLS[kind]
    return base if argv is None else AccelTool(kind, tuple(argv), base.parse)


def read_cards(
    kind: str, argv: Sequence[str] | None = None, timeout: float = SMI_TIMEOUT
) -> list[AccelCard] | None:
    """The cards of ``kind`` the tool lists; None when the tool is not installed."""
    t = tool(kind, argv)
    text = run_smi(t.argv, timeout)
    return None if text is None else parse_cards(kind, text)


def parse_cards(kind: str, text: str) -> list[AccelCard]:
    """The tool's output as cards; output in a format the parser does not know is a
    :class:`ProbeError` (the node must not be rendered with guessed cards)."""
    try:
        return tool(kind).parse(text)
    except SmiFormatError as exc:
        raise ProbeError(str(exc)) from exc


def probe_accels(
    argvs: Mapping[str, Sequence[str]] | None = None,
    *,
    device_dir: str = DEFAULT_DEVICE_DIR,
    timeout: float = SMI_TIMEOUT,
) -> tuple[Accel, ...]:
    """MLU, DCU and XPU cards of this host, by kind then index; a kind whose tool is not
    installed has none."""
    argvs = argvs or {}
    out: list[Accel] = []
    for kind in ACCEL_KINDS:
        cards = read_cards(kind, argvs.get(kind), timeout) or []
        out += [
            Accel(
                kind=kind,
                index=c.index,
                model=c.model,
                device=accel_device(kind, device_dir, c.index),
                memory_mib=c.memory_total_mib,
            )
            for c in cards
        ]
    return tuple(out)


def accel_samples(kind: str, text: str) -> tuple[DeviceSample, ...]:
    """The load of each card in the tool's output, by card number."""
    return tuple(
        DeviceSample(
            kind,
            c.index,
            util_percent=c.util_percent,
            memory_used_mib=c.memory_used_mib,
            memory_total_mib=c.memory_total_mib,
            power_w=c.power_w,
            temperature_c=c.temperature_c,
        )
        for c in parse_cards(kind, text)
    )


def card_health(card: AccelCard) -> DeviceHealth:
    """A card's state as its tool reports it: a health word other than ``Good``/``OK``
    (cnmon prints ``Good``) or uncorrectable ECC errors (xpu-smi) make it unfit for work."""
    errors: list[str] = []
    word = card.health.strip()
    if word and word.lower() not in {"good", "ok", "normal", "healthy"}:
        errors.append(f"health {word}")
    if card.ecc_uncorrected:
        errors.append(f"{card.ecc_uncorrected} uncorrected ECC error(s)")
    return DeviceHealth(card.kind, card.index, tuple(errors), (), card.ecc_uncorrected)


def accel_health(kind: str, text: str) -> tuple[DeviceHealth, ...]:
    """Each card's health in the tool's output, by card number."""
    return tuple(card_health(c) for c in parse_cards(kind, text))
