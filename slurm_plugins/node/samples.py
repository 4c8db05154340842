"""Per-job utilisation samples: the node agent writes them, the policy daemon and the portal
read them.

Every interval the agent appends ``{"ts", "job", "util", "node"}`` lines to
``<samples dir>/<node>.jsonl`` (a shared directory); :class:`SampleReader` reads every
node's file back, per job. Where the source reads the cards' power draw, a line also has
``"watts"`` (the job's cards on this node together) and ``"power"``: ``measured`` from the
driver, or ``fake`` for the lab's device files; accounting integrates them into energy per
job (:mod:`accounting.energy`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: Rewrite a samples file once it grows past this, keeping only recent lines.
MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Sample:
    """One utilisation sample of a job's accelerators, in percent (0-100)."""

    ts: float
    util: float


def write_samples(
    out_dir: Path,
    node: str,
    samples: Mapping[int, float],
    now: float,
    keep_s: float = 3600,
    *,
    max_bytes: int = MAX_FILE_BYTES,
    watts: Mapping[int, float] | None = None,
    power: str = "measured",
) -> Path:
    """Append one line per job to ``<out_dir>/<node>.jsonl``; once the file is larger than
    ``max_bytes``, lines older than ``keep_s`` are dropped first. ``watts`` (per job) adds
    the power draw, marked ``power`` (``measured`` or ``fake``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{node}.jsonl"
    watts = watts or {}
    lines = [
        json.dumps(
            {"ts": now, "job": j, "util": u, "node": node}
            | ({"watts": round(watts[j], 1), "power": power} if j in watts else {})
        )
        for j, u in samples.items()
    ]
    if path.exists() and path.stat().st_size > max_bytes:
        kept = [ln for ln in path.read_text().splitlines() if _ts(ln) >= now - keep_s]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(x + "\n" for x in kept))
        os.replace(tmp, path)
    if lines:
        with path.open("a") as f:
            f.write("".join(x + "\n" for x in lines))
    return path


def _ts(line: str) -> float:
    try:
        return float(json.loads(line).get("ts", 0))
    except (ValueError, AttributeError):
        return 0.0


class SampleReader:
    """All nodes' samples of the last ``max_age_s`` seconds, per job, oldest first."""

    def __init__(self, directory: Path, max_age_s: float = 3600) -> None:
        self.dir = Path(directory)
        self.max_age = max_age_s

    def read(self, now: float, jobs: Iterable[int] | None = None) -> dict[int, tuple[Sample, ...]]:
        wanted = set(jobs) if jobs is not None else None
        out: dict[int, list[Sample]] = {}
        for f in sorted(self.dir.glob("*.jsonl")) if self.dir.is_dir() else ():
            try:
                text = f.read_text()
            except OSError:
                continue
            for line in text.splitlines():
                try:
                    d = json.loads(line)
                    ts, job, util = float(d["ts"]), int(d["job"]), float(d["util"])
                except (ValueError, KeyError, TypeError):
                    continue
                if ts >= now - self.max_age and (wanted is None or job in wanted):
                    out.setdefault(job, []).append(Sample(ts, util))
        return {j: tuple(sorted(s, key=lambda x: x.ts)) for j, s in out.items()}
