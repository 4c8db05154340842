"""Measured compute scores per node kind: what a short benchmark job got, and where from.

A score is the TFLOPS (TOPS for int8) a node kind's card reached in a matrix multiply at one
precision. ``source`` says how it was found: ``measured`` on the card (torch on CUDA or
torch_npu), ``measured-cpu`` (numpy FP32 on a node without cards), or ``catalogue`` where the
node's cards cannot run code (the lab's fake device files): then the catalogue's figure is
reported and marked so, never passed off as a measurement.

The scores live in one JSON file (``aipool gres score run --store``; the portal's
``SCORES_FILE``), replaced atomically after each run: one entry per node kind and precision.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gres.catalogue import Catalogue, Precision

SOURCES = ("measured", "measured-cpu", "catalogue")


@dataclass(frozen=True, slots=True)
class Score:
    """One node kind's figure at one precision."""

    kind: str  # the card's GRES type (a100, 910b) or "cpu"
    precision: Precision
    tflops: float
    source: str
    node: str
    at: float  # epoch seconds
    device: str = ""  # what ran it: the torch device name, "numpy", or the catalogue card

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"precision": self.precision.value}


def from_dict(d: Mapping[str, Any]) -> Score:
    source = str(d["source"])
    if source not in SOURCES:
        raise ValueError(f"unknown score source {source!r}")
    return Score(
        kind=str(d["kind"]),
        precision=Precision(d["precision"]),
        tflops=float(d["tflops"]),
        source=source,
        node=str(d["node"]),
        at=float(d["at"]),
        device=str(d.get("device", "")),
    )


def catalogue_scores(
    catalogue: Catalogue, kind: str, node: str, at: float, memory_mib: int = 0
) -> list[Score]:
    """The catalogue's figures for a card that cannot run the benchmark, marked as such."""
    card = catalogue.lookup(kind, memory_mib)
    if card is None:
        return []
    return [
        Score(kind, p, card.tflops[p], "catalogue", node, at, card.id)
        for p in Precision
        if p in card.tflops
    ]


def load_scores(path: Path) -> list[Score]:
    """The stored scores; none when the file does not exist yet."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return [from_dict(d) for d in data.get("scores", [])]


def merge_scores(old: Iterable[Score], new: Iterable[Score]) -> list[Score]:
    """The old scores with the new ones in place of those of the same kind and precision."""
    fresh = {(s.kind, s.precision): s for s in new}
    kept = [s for s in old if (s.kind, s.precision) not in fresh]
    return sorted(
        [*kept, *fresh.values()], key=lambda s: (s.kind, list(Precision).index(s.precision))
    )


def save_scores(path: Path, scores: Iterable[Score]) -> None:
    """Replace the file atomically, readable by the portal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"version": 1, "scores": [s.to_dict() for s in scores]}, indent=1)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".scores-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
