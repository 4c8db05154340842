"""Fractional GPUs as Slurm shards: which fractions exist and how many shards they take.

Each GPU is split into ``shards_per_gpu`` shards (32 by default), so a job can ask for any
k/32 of a card, not only halves and quarters; traces of real workloads need that finer grid.
In Slurm 22.05 one job's shards must all come from one GPU (a larger request pends forever),
which :meth:`ShardPlan.fits_one_card` checks before a job is submitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from gres.naming import DEFAULT_SHARDS_PER_GPU

#: Same bounds as the inventory's ``shards_per_gpu``.
MAX_SHARDS_PER_GPU = 128
#: Floats are binary approximations; a float this close to a grid point means that point.
_FLOAT_TOLERANCE = 1e-9

FractionLike = Fraction | float | int | str


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """The shard grid of a GPU: sizes 1/n … n/n for ``n = shards_per_gpu``."""

    shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU

    def __post_init__(self) -> None:
        n = self.shards_per_gpu
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SHARDS_PER_GPU:
            raise ValueError(f"shards_per_gpu must be an integer in 1..{MAX_SHARDS_PER_GPU}")

    def fraction_to_shards(self, fraction: FractionLike) -> int:
        """Shards for a share of one card: ``"1/8"`` → 4, ``0.25`` → 8, ``Fraction(5, 32)`` → 5.

        Raises ValueError naming the nearest valid sizes when the share is not on the grid or
        not in (0, 1].
        """
        n = self.shards_per_gpu
        value = _to_fraction(fraction)
        if isinstance(fraction, float):
            k = round(fraction * n)
            if 1 <= k <= n and abs(fraction * n - k) <= _FLOAT_TOLERANCE:
                return k
        elif 0 < value <= 1 and (value * n).denominator == 1:
            return int(value * n)
        shown = _show(fraction, value)
        if value <= 0 or value > 1:
            raise ValueError(
                f"GPU fraction {shown} is outside (0, 1]; valid sizes are 1/{n} to 1; nearest: "
                f"{self._sizes(self._nearest(value))}"
            )
        raise ValueError(
            f"GPU fraction {shown} is not a multiple of 1/{n}; nearest valid sizes: "
            f"{self._sizes(self._nearest(value))}"
        )

    def shards_to_fraction(self, shards: int) -> Fraction:
        """The share of one card that ``shards`` shards are; 1..shards_per_gpu only."""
        if isinstance(shards, bool) or not isinstance(shards, int):
            raise TypeError("shards must be an integer")
        if not 1 <= shards <= self.shards_per_gpu:
            raise ValueError(f"shards must be in 1..{self.shards_per_gpu}, got {shards}")
        return Fraction(shards, self.shards_per_gpu)

    def fits_one_card(self, shards: int) -> bool:
        """Can Slurm 22.05 place a request for ``shards`` shards (all on one GPU) at all?"""
        return 1 <= shards <= self.shards_per_gpu

    def valid_sizes(self) -> list[Fraction]:
        """Every fraction a job may ask for, smallest first."""
        return [Fraction(k, self.shards_per_gpu) for k in range(1, self.shards_per_gpu + 1)]

    def _nearest(self, value: Fraction) -> list[int]:
        n = self.shards_per_gpu
        scaled = value * n
        candidates = {math.floor(scaled), math.ceil(scaled)}
        return sorted(min(max(k, 1), n) for k in candidates)

    def _sizes(self, shard_counts: list[int]) -> str:
        """``3/32 (shard:3), 1/8 (shard:4)``: each size with the GRES Slurm is asked for, words
        no reader needs translated."""
        return ", ".join(
            f"{Fraction(k, self.shards_per_gpu)} (shard:{k})" for k in sorted(set(shard_counts))
        )


def _to_fraction(fraction: FractionLike) -> Fraction:
    if isinstance(fraction, bool):
        raise TypeError("a GPU fraction must be a number or a string like '1/8'")
    if isinstance(fraction, Fraction | int):
        return Fraction(fraction)
    if isinstance(fraction, float):
        if not math.isfinite(fraction):
            raise ValueError(f"GPU fraction {fraction} is not a finite number")
        return Fraction(repr(fraction))
    if isinstance(fraction, str):
        try:
            return Fraction(fraction.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(
                f"GPU fraction {fraction!r} is not a number like '1/8', '5/32' or '0.25'"
            ) from None
    raise TypeError("a GPU fraction must be a number or a string like '1/8'")


def _show(fraction: FractionLike, value: Fraction) -> str:
    return repr(fraction) if isinstance(fraction, str | float) else str(value)


_DEFAULT = ShardPlan()


def fraction_to_shards(fraction: FractionLike, shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU) -> int:
    """:meth:`ShardPlan.fraction_to_shards` on a plan of ``shards_per_gpu`` (default 32)."""
    plan = _DEFAULT if shards_per_gpu == DEFAULT_SHARDS_PER_GPU else ShardPlan(shards_per_gpu)
    return plan.fraction_to_shards(fraction)


def shards_to_fraction(shards: int, shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU) -> Fraction:
    """:meth:`ShardPlan.shards_to_fraction` on a plan of ``shards_per_gpu`` (default 32)."""
    return ShardPlan(shards_per_gpu).shards_to_fraction(shards)


def fits_one_card(shards: int, shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU) -> bool:
    """:meth:`ShardPlan.fits_one_card` on a plan of ``shards_per_gpu`` (default 32)."""
    return ShardPlan(shards_per_gpu).fits_one_card(shards)
