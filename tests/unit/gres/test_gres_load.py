"""Each accelerator's load now: the figures of recorded ``npu-smi info`` tables and of a
stand-in pynvml with NVML's names and shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from gres.device import DeviceSample
from gres.errors import ProbeError
from gres.npusmi import parse_npu_smi_info
from gres.probe import gpu_samples, npu_samples

SAMPLES = Path(__file__).resolve().parents[3] / "tests" / "data" / "npu-smi"
MIB = 1024 * 1024


def chips(name: str):  # type: ignore[no-untyped-def]
    return parse_npu_smi_info((SAMPLES / name).read_text())


def test_910b3_figures_per_chip() -> None:
    got = chips("atlas-800t-a2-910b3.txt")
    first, last = got[0], got[7]
    assert (first.power_w, first.temperature_c, first.aicore_percent) == (102.8, 55.0, 0.0)
    assert (first.hbm_used_mib, first.hbm_mib, first.used_mib) == (3338, 65536, 3338)
    assert (last.power_w, last.temperature_c, last.hbm_used_mib) == (105.1, 59.0, 3338)
    assert [c.temperature_c for c in got] == [55, 54, 56, 57, 58, 56, 58, 59]


def test_910a_uses_hbm_not_ddr_for_its_load() -> None:
    first = chips("atlas-800-9010-910a.txt")[0]
    assert (first.memory_used_mib, first.memory_mib) == (1867, 15077)
    assert (first.hbm_used_mib, first.hbm_mib) == (0, 32768)
    assert (first.used_mib, first.capacity_mib) == (0, 32768)
    assert (first.power_w, first.temperature_c) == (67.2, 43.0)


def test_a3_second_chip_has_no_power_figure() -> None:
    got = chips("atlas-a3-ascend910.txt")
    assert (got[0].power_w, got[0].temperature_c, got[0].hbm_used_mib) == (166.9, 38.0, 46536)
    assert (got[1].power_w, got[1].temperature_c, got[1].hbm_used_mib) == (None, 37.0, 46084)


def test_310_cards_without_hbm_report_their_ddr() -> None:
    got = chips("atlas-800-3000-310.txt")
    assert [(c.device_id, c.used_mib, c.capacity_mib) for c in got][:2] == [
        (3, 2703, 8192),
        (4, 2867, 8192),
    ]
    assert (got[0].power_w, got[0].temperature_c, got[0].aicore_percent) == (12.8, 73.0, 0.0)


def test_npu_samples_are_per_device_id() -> None:
    text = (SAMPLES / "atlas-800t-a2-910b3.txt").read_text()
    busy = text.replace(
        "| 0                         | 0000:81:00.0  | 0           0    / 0          3334 / 65536",
        "| 0                         | 0000:81:00.0  | 64          0    / 0          9000 / 65536",
    )
    assert busy != text
    got = npu_samples(busy)
    assert [s.index for s in got] == list(range(8))
    assert got[2] == DeviceSample("npu", 2, 64.0, 9000, 65536, 96.5, 56.0)
    assert got[0].util_percent == 0.0


@pytest.mark.parametrize(
    ("cell", "aicore"),
    [("| NA          0    / 0", None), ("| 0    / 0          3338 / 65536", None)],
)
def test_an_aicore_npu_smi_does_not_print_is_none(cell: str, aicore: float | None) -> None:
    text = (SAMPLES / "atlas-800t-a2-910b3.txt").read_text()
    odd = text.replace("| 0           0    / 0", cell, 1)
    assert odd != text
    assert parse_npu_smi_info(odd)[0].aicore_percent == aicore


# --- NVML --------------------------------------------------------------------------------------


class NVMLError(Exception):
    pass


@dataclass
class Card:
    minor: int
    util: int = 0
    used: int = 0
    power_mw: int | None = 100_000  # None: NotSupported
    temp: int = 40
    lost: bool = False


@dataclass
class FakeNvml:
    cards: list[Card]
    init_error: Exception | None = None
    count_error: bool = False
    calls: list[str] = field(default_factory=list)

    NVMLError = NVMLError
    NVML_TEMPERATURE_GPU = 0

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        if self.count_error:
            raise NVMLError("Unknown Error")
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Card:
        if self.cards[i].lost:
            raise NVMLError("GPU is lost")
        return self.cards[i]

    def nvmlDeviceGetMinorNumber(self, h: Card) -> int:
        return h.minor

    def nvmlDeviceGetUtilizationRates(self, h: Card) -> SimpleNamespace:
        return SimpleNamespace(gpu=h.util, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h: Card) -> SimpleNamespace:
        return SimpleNamespace(total=80 * 1024 * MIB, used=h.used * MIB, free=0)

    def nvmlDeviceGetPowerUsage(self, h: Card) -> int:
        if h.power_mw is None:
            raise NVMLError("Not Supported")
        return h.power_mw

    def nvmlDeviceGetTemperature(self, h: Card, sensor: int) -> int:
        assert sensor == 0
        return h.temp


def test_gpu_samples_by_minor_number() -> None:
    nvml = FakeNvml(
        [Card(3, util=90, used=40_000, power_mw=312_250, temp=71), Card(1, power_mw=None)]
    )
    assert gpu_samples(nvml) == (
        DeviceSample("gpu", 1, 0.0, 0, 81920, None, 40.0),
        DeviceSample("gpu", 3, 90.0, 40_000, 81920, 312.25, 71.0),
    )
    assert nvml.calls == ["init", "shutdown"]


def test_a_lost_card_is_left_out_and_the_others_sampled() -> None:
    got = gpu_samples(FakeNvml([Card(0, util=5), Card(1, lost=True), Card(2, util=7)]))
    assert [(s.index, s.util_percent) for s in got] == [(0, 5.0), (2, 7.0)]


def test_no_driver_means_no_samples_and_a_broken_one_is_an_error() -> None:
    assert gpu_samples(FakeNvml([Card(0)], init_error=NVMLError("Driver Not Loaded"))) == ()
    broken = FakeNvml([Card(0)], count_error=True)
    with pytest.raises(ProbeError, match="could not count"):
        gpu_samples(broken)
    assert broken.calls == ["init", "shutdown"]
