"""Ideas for the live path, each measured against the live path as it is, in the same run:
the FGD protocol, seeds 42-51, 130 % arrived, on the task lists where shares of a card
dominate (``gpushare100``, the ``mix-share70`` mix) and on the default one.

* batching: the daemon sees B arrivals in one cycle and places the largest first (a busy
  queue's cycles; with one arrival a cycle it is the live path itself);
* a finer shard grid: k/64 or k/100 of a card instead of k/32 (a site's ``shards_per_gpu``);
* the scorer's knobs: gains compared in 10- or 50-milli steps instead of 25; stranded GPUs
  weighted 1 or 4 instead of 2;
* consolidating leftovers: a share that would break a whole free card scores lower;
* FGD's own scorer on the live path (what the daemon would do with ``scorer: fgd``).

    .venv/bin/python bench/sim_ideas.py [--data DIR] [--jobs 2] [--seeds 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gres.placement import MILLI, SCORERS, NodeView, Request, Scorer, Workload  # noqa: E402
from gres.placement_cards import cards_slurm  # noqa: E402
from gres.placement_frag import DEFAULT_PARAMS, AipoolParams, aipool_best  # noqa: E402
from sim import report  # noqa: E402
from sim.cluster import SHARDS, Grid  # noqa: E402
from sim.live import run_live  # noqa: E402
from sim.mixes import MIXES, mix  # noqa: E402
from sim.trace import load_nodes, load_tasks  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "alibaba-gpu-v2023"
TRACES = ("gpushare100", "mix-share70", "default")


def _aipool(params: AipoolParams, consolidate: float = 0.0) -> Callable[..., float]:
    def score(request: Request, node: NodeView, workload: Workload) -> float:
        value, cards = aipool_best(request, node, workload, params, card_rule=cards_slurm)
        # a share that would break a whole free card scores lower
        if (
            consolidate
            and request.is_fractional
            and cards
            and node.gpu_free_milli[cards[0]] >= MILLI
        ):
            value -= consolidate
        return value

    return score


def _variant(name: str, params: AipoolParams, consolidate: float = 0.0) -> Scorer:
    return Scorer(name, name, _aipool(params, consolidate), lambda r, n, w, g: cards_slurm(r, n))


@dataclass(frozen=True)
class Idea:
    name: str
    scorer: str  # a registered scorer or a variant below
    batch: int = 1
    order: str = "arrival"
    shards: int = SHARDS.units


VARIANTS = {
    "bucket10": _variant("bucket10", AipoolParams(2.0, 10.0)),
    "bucket50": _variant("bucket50", AipoolParams(2.0, 50.0)),
    "strand1": _variant("strand1", AipoolParams(1.0, 25.0)),
    "strand4": _variant("strand4", AipoolParams(4.0, 25.0)),
    "consolidate": _variant("consolidate", DEFAULT_PARAMS, 4.0),
}
IDEAS = (
    Idea("live path (aipool)", "aipool"),
    Idea("batch of 4, largest first", "aipool", 4, "largest"),
    Idea("batch of 16, largest first", "aipool", 16, "largest"),
    Idea("batch of 64, largest first", "aipool", 64, "largest"),
    Idea("k/64 shards", "aipool", shards=64),
    Idea("k/100 shards", "aipool", shards=100),
    Idea("gains in 10-milli steps", "bucket10"),
    Idea("gains in 50-milli steps", "bucket50"),
    Idea("stranding weight 1", "strand1"),
    Idea("stranding weight 4", "strand4"),
    Idea("consolidate leftovers", "consolidate"),
    Idea("FGD's scorer on the live path", "fgd"),
)


def _one(args: tuple[str, int, int, Path]) -> tuple[str, int, int, float]:
    trace, k, seed, data = args
    idea = IDEAS[k]
    nodes = load_nodes(data / "openb_node_list_gpu_node.csv")
    if trace in MIXES:
        tasks = mix(load_tasks(data / "openb_pod_list_default.csv"), MIXES[trace], seed=1)
    else:
        tasks = load_tasks(data / f"openb_pod_list_{trace}.csv")
    scorer = VARIANTS.get(idea.scorer) or SCORERS[idea.scorer]
    r = run_live(
        nodes,
        tasks,
        seed,
        scorer=scorer,
        batch=idea.batch,
        order=idea.order,
        grid=Grid(idea.shards),
    )
    return trace, k, seed, r.at(130, requested=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    seeds = range(42, 42 + args.seeds)
    work = [(t, k, s, args.data) for t in TRACES for k in range(len(IDEAS)) for s in seeds]
    started = time.perf_counter()
    got: dict[tuple[str, int], dict[int, float]] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for trace, k, seed, value in pool.map(_one, work):
            got.setdefault((trace, k), {})[seed] = value
    wall = time.perf_counter() - started
    print("| idea | " + " | ".join(TRACES) + " |")
    print("| --- |" + " ---: |" * len(TRACES))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for k, idea in enumerate(IDEAS):
        cells = []
        for t in TRACES:
            xs, base = got[(t, k)], got[(t, 0)]
            mean = statistics.fmean(xs.values())
            delta = mean - statistics.fmean(base.values())
            wins = sum(xs[s] > base[s] for s in seeds)
            out.setdefault(idea.name, {})[t] = {
                "mean_130": round(mean, 2),
                "delta": round(delta, 2),
            }
            shown = (
                f"{mean:.2f} %" if k == 0 else f"{mean:.2f} % ({delta:+.2f}, {wins}/{len(seeds)})"
            )
            cells.append(shown)
        print(f"| {idea.name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{len(work)} runs in {wall:.0f} s wall; (change against the live path, seeds won)")
    if args.json:
        report.write_json(args.json, {"seeds": list(seeds), "ideas": out})


if __name__ == "__main__":
    main()
