"""Slurm hostlist-style ranges: ``nvidia[0-3]``, ``gpu[01-16]``.

Slurm reads bracketed ranges in node names and in gres.conf ``File=`` values. We only ever
write ranges that are contiguous and ascending, because Slurm numbers GRES devices in the order
their files appear, and a range we compressed must expand back to exactly that order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_RANGE = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<lo>\d+)-(?P<hi>\d+)\](?P<suffix>[^\[\]]*)$")
_TRAILING_NUMBER = re.compile(r"^(?P<stem>.*?)(?P<num>\d+)$")

#: A node range longer than this in an inventory is almost certainly a typo.
MAX_RANGE = 4096


def expand_range(text: str) -> list[str]:
    """Expand one ``prefix[lo-hi]suffix`` range; a text without brackets is returned as is.

    Zero padding is kept (``gpu[01-03]`` gives ``gpu01``…), as Slurm does. Only one range
    per text is supported: inventories name node groups, not arbitrary hostlists.
    """
    if "[" not in text and "]" not in text:
        return [text]
    match = _RANGE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a valid range: expected prefix[lo-hi]")
    lo_text, hi_text = match["lo"], match["hi"]
    lo, hi = int(lo_text), int(hi_text)
    if hi < lo:
        raise ValueError(f"{text!r}: range end {hi} is below its start {lo}")
    if hi - lo + 1 > MAX_RANGE:
        raise ValueError(f"{text!r}: range of {hi - lo + 1} names is longer than {MAX_RANGE}")
    width = len(lo_text) if lo_text.startswith("0") and len(lo_text) > 1 else 0
    return [f"{match['prefix']}{n:0{width}d}{match['suffix']}" for n in range(lo, hi + 1)]


def compress_numbers(numbers: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"0-2,5"`` (sorted, duplicates dropped)."""
    ordered = sorted(set(numbers))
    parts: list[str] = []
    start = prev = None
    for n in ordered:
        if start is None:
            start = prev = n
        elif prev is not None and n == prev + 1:
            prev = n
        else:
            parts.append(_span(start, prev))
            start = prev = n
    if start is not None:
        parts.append(_span(start, prev))
    return ",".join(parts)


def _span(start: int, end: int | None) -> str:
    return str(start) if end is None or end == start else f"{start}-{end}"


def compress_paths(paths: Sequence[str]) -> list[str]:
    """Merge runs of paths that differ only in an ascending, contiguous trailing number.

    ``nvidia0, nvidia1, nvidia3`` → ``nvidia[0-1], nvidia3``.
    The input order is kept, so each returned item expands to the same devices in the same
    order; callers write one gres.conf line per item.
    """
    runs: list[tuple[str, int, int] | str] = []
    for path in paths:
        match = _TRAILING_NUMBER.match(path)
        num_text = match["num"] if match else ""
        # Zero-padded numbers would change meaning when re-expanded; keep them literal.
        if match is None or (num_text.startswith("0") and len(num_text) > 1):
            runs.append(path)
            continue
        stem, num = match["stem"], int(num_text)
        last = runs[-1] if runs else None
        if isinstance(last, tuple) and last[0] == stem and last[2] + 1 == num:
            runs[-1] = (stem, last[1], num)
        else:
            runs.append((stem, num, num))
    out: list[str] = []
    for run in runs:
        if isinstance(run, str):
            out.append(run)
        elif run[1] == run[2]:
            out.append(f"{run[0]}{run[1]}")
        else:
            out.append(f"{run[0]}[{run[1]}-{run[2]}]")
    return out
