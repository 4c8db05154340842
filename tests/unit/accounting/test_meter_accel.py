"""Metering MLU, DCU and XPU cards: whole cards with the NPUs, typed ``<kind>:<model>``."""

from __future__ import annotations

import pytest

from accounting.meter import UCARDS, Topology, accel_cards, card_kind, meter
from slurm_plugins.client.models import Tres
from tests.unit.accounting.builders import acct


@pytest.mark.parametrize(
    ("tres", "expected"),
    [
        ("gres/mlu=2,gres/mlu:mlu370=2", ("mlu:mlu370", 2 * UCARDS)),
        ("gres/dcu=1,gres/dcu:k100_ai=1", ("dcu:k100_ai", UCARDS)),
        ("gres/xpu=3", ("xpu", 3 * UCARDS)),
        ("cpu=4,gres/gpu=1", ("", 0)),
    ],
)
def test_accel_cards(tres: str, expected: tuple[str, int]) -> None:
    assert accel_cards(Tres.parse(tres)) == expected


def test_two_mlus_for_three_hours_are_six_card_hours_of_kind_mlu() -> None:
    u = meter(acct(1, "cpu=2,gres/mlu=2,gres/mlu:mlu370=2", hours=3), Topology())
    assert u is not None
    assert (u.npu_type, u.npu_ucards, u.gpu_ucards) == ("mlu:mlu370", 2 * UCARDS, 0)
    assert u.npu_ucs == 6 * 3600 * UCARDS
    assert card_kind("npu", u.npu_type) == "mlu"


def test_card_kind() -> None:
    assert card_kind("gpu", "a100") == "gpu"
    assert card_kind("npu", "910b") == "npu"
    assert card_kind("npu", "xpu:p800") == "xpu"
    assert card_kind("npu", "dcu") == "dcu"
