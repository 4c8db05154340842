"""Results as plain data (JSON, CSV), text tables and PNG plots."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.fgd import RunResult
from sim.runner import Job, Summary


def summary_dict(summaries: Iterable[Summary], baseline: str = "best-fit") -> dict[str, Any]:
    """``{label: {policy: {alloc_100, alloc_130, ...}}}``; ratios against ``baseline``."""
    out: dict[str, dict[str, Any]] = {}
    rows = list(summaries)
    base = {s.variant.label: s for s in rows if s.policy == baseline}
    for s in rows:
        ref = base.get(s.variant.label)
        entry = {
            "alloc_100": _r(s.alloc_100),
            "alloc_130": _r(s.alloc_130),
            "sd_100": _r(s.sd_100),
            "sd_130": _r(s.sd_130),
            "requested_100": _r(s.requested_100),
            "requested_130": _r(s.requested_130),
            "failed_tasks": _r(s.failed, 1),
            "tasks": _r(s.tasks, 1),
            "seeds": s.seeds,
            "cpu_seconds": _r(s.cpu_seconds, 1),
        }
        if ref is not None:
            entry[f"vs_{baseline}_130"] = _r(s.alloc_130 / ref.alloc_130, 4)
        out.setdefault(s.variant.label, {})[s.policy] = entry
    return out


def write_runs_csv(path: Path, results: Sequence[tuple[Job, RunResult]]) -> None:
    """One row per run: policy, seed, variant, failures, then allocation at 0..130 %."""
    width = max((len(r.curve) for _, r in results), default=0)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["policy", "seed", "variant", "tasks", "failed", *range(width)])
        for job, r in results:
            writer.writerow(
                [r.policy, r.seed, job.variant.label, r.tasks, r.failed] + [_r(v) for v in r.curve]
            )


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def table(summaries: Sequence[Summary], baseline: str = "best-fit") -> str:
    """A Markdown table: allocation at 100 % and 130 % arrived, and the ratio to ``baseline``."""
    lines = [
        "| policy | variant | 100 % arrived | 130 % arrived | sd (130 %) | vs "
        f"{baseline} | requested (130 %) | failed tasks |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = {s.variant.label: s for s in summaries if s.policy == baseline}
    for s in summaries:
        ref = base.get(s.variant.label)
        ratio = f"{s.alloc_130 / ref.alloc_130:.4f}" if ref else "-"
        lines.append(
            f"| {s.policy} | {s.variant.label} | {s.alloc_100:.2f} % | {s.alloc_130:.2f} % | "
            f"{s.sd_130:.2f} | {ratio} | {s.requested_130:.2f} % | {s.failed:.0f} |"
        )
    return "\n".join(lines)


def plot_curves(path: Path, summaries: Sequence[Summary], title: str) -> None:
    """Allocation ratio against arrived demand, one line per policy (mean of seeds)."""
    plt = _pyplot()
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12, 4.5), width_ratios=(3, 2))
    for s in summaries:
        xs = [x for x, y in enumerate(s.curve) if not math.isnan(y)]
        ys = [s.curve[x] for x in xs]
        label = f"{s.policy} ({s.variant.label})" if _mixed(summaries) else s.policy
        for axis in (ax, zoom):
            axis.plot(xs, ys, label=label, linewidth=1.4)
    ax.plot([0, 100], [0, 100], color="grey", linewidth=0.6, linestyle=":")
    ax.set_xlabel("arrived GPU demand (% of capacity)")
    ax.set_ylabel("GPU allocation (% of capacity)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    zoom.set_xlim(85, 131)
    zoom.set_ylim(84, 100)
    zoom.set_title("85-130 % arrived")
    zoom.set_xlabel("arrived GPU demand (%)")
    for axis in (ax, zoom):
        axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_bars(path: Path, rows: Mapping[str, Mapping[str, float]], title: str) -> None:
    """Grouped bars: ``rows[trace][policy]`` = allocation (%) at 130 % arrived."""
    plt = _pyplot()
    traces = list(rows)
    policies = list(dict.fromkeys(p for r in rows.values() for p in r))
    width = 0.8 / max(len(policies), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(traces)), 4.2))
    for k, policy in enumerate(policies):
        xs = [t + (k - (len(policies) - 1) / 2) * width for t in range(len(traces))]
        ys = [rows[t].get(policy, math.nan) for t in traces]
        bars = ax.bar(xs, ys, width, label=policy)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    ax.set_xticks(range(len(traces)), traces)
    low = min((v for r in rows.values() for v in r.values() if not math.isnan(v)), default=0)
    ax.set_ylim(max(0.0, low - 5), 100)
    ax.set_ylabel("GPU allocation at 130 % arrived (%)")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=len(policies))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _mixed(summaries: Sequence[Summary]) -> bool:
    return len({s.variant for s in summaries}) > 1


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _r(value: float, digits: int = 2) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def plot_replay(path: Path, results: Sequence[Mapping[str, Any]], title: str) -> None:
    """GPU allocation over time per queue policy, with the demand of the first run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for k, r in enumerate(results):
        hours = [p[0] for p in r["series"]]
        ax.plot(hours, [p[1] for p in r["series"]], label=f"{r['policy']} allocation", lw=1.2)
        if k == 0:
            ax.plot(hours, [p[2] for p in r["series"]], color="grey", ls=":", label="demand")
    ax.axhline(100, color="black", lw=0.6)
    ax.axhline(80, color="red", lw=0.6, ls="--", label="80 %")
    ax.set_ylim(0, 250)
    ax.set_xlabel("virtual time (h)")
    ax.set_ylabel("% of the slice's GPUs")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=3)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_kueue(
    path: Path, results: Sequence[Mapping[str, Any]], reported: Mapping[str, float]
) -> None:
    """Mean time to admission per workload class and policy, next to Kueue's own."""
    plt = _pyplot()
    classes = ("large", "medium", "small")
    rows = {"kueue (reported)": {c: reported[c] for c in classes}}
    rows.update({r["policy"]: {c: r[c] for c in classes} for r in results})
    fig, (ax, use) = plt.subplots(1, 2, figsize=(12, 4.2), width_ratios=(3, 2))
    width = 0.8 / len(rows)
    for k, (name, vals) in enumerate(rows.items()):
        xs = [c + (k - (len(rows) - 1) / 2) * width for c in range(len(classes))]
        bars = ax.bar(xs, [vals[c] for c in classes], width, label=name)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    ax.set_xticks(range(len(classes)), classes)
    ax.set_ylabel("mean time to admission (s)")
    ax.set_title("Kueue baseline scenario: waits")
    ax.legend(fontsize=8)
    names = list(rows)
    usage = [reported["min_usage"]] + [r["min_usage"] for r in results]
    bars = use.bar(names, usage, color=[f"C{k}" for k in range(len(names))])
    use.bar_label(bars, fmt="%.1f", fontsize=8)
    use.axhline(60, color="red", lw=0.8, ls="--")
    use.set_ylim(0, 105)
    use.set_ylabel("queue usage (% of nominal quota)")
    use.set_title("usage")
    use.tick_params(axis="x", labelrotation=20)
    for axis in (ax, use):
        axis.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
