"""Slurm hostlists: ``gpu[01-16]``, ``gpu[1-2,4],npu1``, ``rack[1-2]-n[1-4]``; device ranges.

The one reading of Slurm's range grammar: node lists as ``squeue``/``sacct`` print them and
as we write them to ``ReqNodeList``/``ExcNodeList``, node groups in inventories, and
gres.conf ``File=`` values. An item is text with bracketed groups of numbers and ranges;
several groups multiply out (Slurm's multi-dimensional names); zero padding is kept
(``gpu[08-10]`` gives ``gpu08``…), as Slurm does.

We only ever write ranges that are contiguous and ascending, because Slurm numbers GRES
devices in the order their files appear, and a range we compressed must expand back to
exactly that order.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence

_RANGE = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<lo>\d+)-(?P<hi>\d+)\](?P<suffix>[^\[\]]*)$")
_GROUP = re.compile(r"\[([^\[\]]*)\]")
_FIRST_ITEM = re.compile(r"[^,\[\]]*(?:\[[^\[\]]*\][^,\[\]]*)*")
_TRAILING_NUMBER = re.compile(r"^(?P<stem>.*?)(?P<num>\d+)$")

#: A node range longer than this in an inventory is almost certainly a typo.
MAX_RANGE = 4096


def _numbers(body: str, item: str) -> list[str]:
    """``1-3,07`` → ``["1", "2", "3", "07"]``, each zero-padded like its range's start."""
    out: list[str] = []
    for part in body.split(","):
        lo_text, _, hi_text = part.strip().partition("-")
        hi_text = hi_text or lo_text
        if not (lo_text.isdigit() and hi_text.isdigit()):
            raise ValueError(f"{item!r}: {part!r} is not a number or a range lo-hi")
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise ValueError(f"{item!r}: range end {hi} is below its start {lo}")
        width = len(lo_text) if lo_text.startswith("0") and len(lo_text) > 1 else 0
        out += [f"{n:0{width}d}" for n in range(lo, hi + 1)]
    return out


def _expand_item(item: str) -> Iterator[str]:
    """The names of one item, in Slurm's order (the first group varies slowest)."""
    if "[" not in item and "]" not in item:
        yield item
        return
    pieces = _GROUP.split(item)  # literal, group, literal, group, …, literal
    literals, groups = pieces[::2], pieces[1::2]
    if any("[" in s or "]" in s for s in literals):
        raise ValueError(f"{item!r} has unbalanced brackets")
    numbers = [_numbers(g, item) for g in groups]
    for combo in itertools.product(*numbers):
        yield literals[0] + "".join(n + lit for n, lit in zip(combo, literals[1:], strict=True))


def _items(text: str) -> list[str]:
    """Split at the commas outside brackets."""
    if "[" not in text:
        return [i.strip() for i in text.split(",") if i.strip()]
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur).strip())
    return [i for i in items if i]


def expand_hostlist(text: str) -> tuple[str, ...]:
    """``gpu[1-2,4],npu1`` → ``("gpu1", "gpu2", "gpu4", "npu1")``: order kept, duplicates
    and Slurm's ``(null)`` dropped; an empty text is no names. Malformed text raises
    ValueError."""
    names = (n for item in _items(text or "") for n in _expand_item(item))
    return tuple(dict.fromkeys(n for n in names if n and n != "(null)"))


def first_host(text: str) -> str:
    """The first name of a hostlist (``gpu[01-03],cpu1`` → ``gpu01``) without expanding the
    rest; ``""`` for an empty list."""
    if "[" not in text and "," not in text:  # one plain host, as most jobs run on
        return text.strip()
    end = m.end() if (m := _FIRST_ITEM.match(text)) else 0
    item = text[:end].strip()
    if not item or text[end : end + 1] not in ("", ","):  # odd text: the full reading
        items = _items(text)
        item = items[0] if items else ""
    # Only each group's first number matters: a long range is not expanded for it.
    first = _GROUP.sub(lambda m: f"[{m[1].split(',')[0].partition('-')[0]}]", item)
    return next(_expand_item(first), "")


def expand_range(text: str) -> list[str]:
    """Expand one ``prefix[lo-hi]suffix`` range of an inventory; a text without brackets is
    returned as is.

    Only one range per text is allowed, and at most :data:`MAX_RANGE` names: inventories
    name node groups, not arbitrary hostlists.
    """
    if "[" not in text and "]" not in text:
        return [text]
    match = _RANGE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a valid range: expected prefix[lo-hi]")
    lo, hi = int(match["lo"]), int(match["hi"])
    if hi - lo + 1 > MAX_RANGE:
        raise ValueError(f"{text!r}: range of {hi - lo + 1} names is longer than {MAX_RANGE}")
    return list(_expand_item(text))


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
