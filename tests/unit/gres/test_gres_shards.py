"""Shard plans: fractions of a card on the k/n grid, and what one job can get in Slurm 22.05."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gres.shards import ShardPlan, fits_one_card, fraction_to_shards, shards_to_fraction

PLAN = ShardPlan()


@pytest.mark.parametrize(
    ("fraction", "shards"),
    [
        ("1/8", 4),
        ("5/32", 5),
        ("0.25", 8),
        (" 1/2 ", 16),
        ("1", 32),
        (0.25, 8),
        (0.03125, 1),
        (1, 32),
        (Fraction(5, 32), 5),
        (Fraction(3, 4), 24),
    ],
)
def test_fraction_to_shards(fraction: Fraction | float | int | str, shards: int) -> None:
    assert PLAN.fraction_to_shards(fraction) == shards
    assert fraction_to_shards(fraction) == shards


@pytest.mark.parametrize(
    ("fraction", "message"),
    [
        ("1/10", re.escape("of 1/32; nearest valid sizes: 3/32 (shard:3), 1/8 (shard:4")),
        (0.1, "GPU fraction 0.1 is not a multiple of 1/32"),
        ("1/64", re.escape("nearest valid sizes: 1/32 (shard:1)") + "$"),
        ("3/2", r"outside \(0, 1\]; valid sizes are 1/32 to 1; nearest: 1 \(shard:32\)"),
        (0, r"outside \(0, 1\]"),
        ("-1/4", r"outside \(0, 1\]"),
        ("abc", "not a number like '1/8'"),
        ("1/0", "not a number"),
        (float("inf"), "not a finite number"),
        (float("nan"), "not a finite number"),
    ],
)
def test_off_grid_fractions_name_the_nearest_sizes(
    fraction: Fraction | float | int | str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PLAN.fraction_to_shards(fraction)


def test_non_numbers_are_type_errors() -> None:
    with pytest.raises(TypeError):
        PLAN.fraction_to_shards(True)
    with pytest.raises(TypeError):
        PLAN.fraction_to_shards(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        PLAN.shards_to_fraction(1.0)  # type: ignore[arg-type]


def test_shards_to_fraction_and_limits() -> None:
    assert PLAN.shards_to_fraction(4) == Fraction(1, 8)
    assert shards_to_fraction(32) == 1
    with pytest.raises(ValueError, match=r"1\.\.32"):
        PLAN.shards_to_fraction(33)
    with pytest.raises(ValueError, match=r"1\.\.32"):
        PLAN.shards_to_fraction(0)


def test_fits_one_card() -> None:
    assert PLAN.fits_one_card(32)
    assert not PLAN.fits_one_card(33)
    assert not PLAN.fits_one_card(0)
    assert fits_one_card(40, shards_per_gpu=64)
    assert not fits_one_card(40)


@pytest.mark.parametrize("n", [0, 129, -1])
def test_plan_bounds(n: int) -> None:
    with pytest.raises(ValueError, match=r"1\.\.128"):
        ShardPlan(n)


def test_other_grids() -> None:
    plan = ShardPlan(24)
    assert plan.fraction_to_shards(1 / 3) == 8
    assert plan.fraction_to_shards("1/3") == 8
    assert fraction_to_shards("1/4", shards_per_gpu=4) == 1
    assert len(plan.valid_sizes()) == 24
    assert plan.valid_sizes()[0] == Fraction(1, 24)


_plans = st.integers(min_value=1, max_value=128).map(ShardPlan)


@given(_plans, st.data())
def test_round_trip_on_the_grid(plan: ShardPlan, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=1, max_value=plan.shards_per_gpu))
    fraction = plan.shards_to_fraction(k)
    assert plan.fraction_to_shards(fraction) == k
    assert plan.fraction_to_shards(f"{fraction.numerator}/{fraction.denominator}") == k
    assert plan.fraction_to_shards(float(fraction)) == k
    assert plan.fits_one_card(k)


@given(_plans, st.fractions(min_value=Fraction(1, 10**6), max_value=1))
def test_off_grid_is_rejected_and_on_grid_accepted(plan: ShardPlan, fraction: Fraction) -> None:
    on_grid = (fraction * plan.shards_per_gpu).denominator == 1
    if on_grid:
        assert plan.shards_to_fraction(plan.fraction_to_shards(fraction)) == fraction
    else:
        with pytest.raises(ValueError, match="nearest valid sizes") as info:
            plan.fraction_to_shards(fraction)
        # The suggested sizes bracket the request and are themselves valid.
        shown = [s.split(" ")[0] for s in str(info.value).split(": ")[1].split(", ")]
        for size in shown:
            assert plan.fraction_to_shards(size) >= 1


@given(_plans, st.integers(min_value=-5, max_value=200))
def test_fits_one_card_matches_the_grid(plan: ShardPlan, k: int) -> None:
    assert plan.fits_one_card(k) == (1 <= k <= plan.shards_per_gpu)
