"""``aipool sim``: run the simulator from the command line.

``aipool sim fgd --nodes NODES.csv --pods PODS.csv --policy fgd --policy aipool --json``
runs the FGD paper's protocol on any node and task list in the Alibaba trace's CSV format.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.placement import SCORERS
from sim.parallel import kueue_one, progress_bar, run_parallel

if TYPE_CHECKING:
    from sim.trace import NodeSpec, Task

GRIDS = {"raw": 1000, "shards": DEFAULT_SHARDS_PER_GPU}
_CSV = click.Path(exists=True, dir_okay=False, path_type=Path)
_WORKERS = click.option(
    "--jobs",
    "workers",
    type=click.IntRange(1, 256),
    default=None,
    help="Worker processes (default: CPU count).",
)
_JSON = click.Path(exists=True, dir_okay=False, path_type=Path)


def _load_trace(nodes_csv: Path, pods_csv: Path) -> tuple[list[NodeSpec], list[Task]]:
    """The node and task lists, or a usage error naming what is wrong with them."""
    from sim.trace import TraceError, load_nodes, load_tasks

    try:
        return load_nodes(nodes_csv), load_tasks(pods_csv)
    except TraceError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group()
def cli() -> None:
    """Trace-driven simulation of AIPool's placement and queue policies."""


@cli.command()
@click.option(
    "--nodes",
    "nodes_csv",
    type=_CSV,
    required=True,
    help="Node list: sn,cpu_milli,memory_mib,gpu,model.",
)
@click.option(
    "--pods",
    "pods_csv",
    type=_CSV,
    required=True,
    help="Task list: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec…].",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(sorted(SCORERS)),
    help="Placement policy (repeat for several). Default: the six baselines and aipool.",
)
@click.option("--seeds", default="42-51", show_default=True, help="Seeds: 42-51 or 42,44.")
@click.option(
    "--ratio",
    default=1.3,
    show_default=True,
    type=click.FloatRange(0.01, 10),
    help="Arrive until GPU demand is this multiple of capacity.",
)
@click.option(
    "--grid",
    "grids",
    multiple=True,
    type=click.Choice(sorted(GRIDS)),
    help="raw trace fractions (default) and/or shards: rounded up to k/32.",
)
@click.option(
    "--cards",
    "cards",
    multiple=True,
    type=click.Choice(["policy", "slurm"]),
    help="Who picks the card in a node: the policy (default) and/or slurmctld.",
)
@click.option(
    "--rules",
    "rules",
    multiple=True,
    type=click.Choice(["ideal", "live"]),
    help="ideal (default): the protocol as published (the upper bound for AIPool); live: "
    "what the live path does (k/32 shards, whole CPUs, the daemon's task model, "
    "slurmctld's cards); --grid and --cards apply to ideal only.",
)
@click.option(
    "--batch",
    default=1,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="live: arrivals one daemon cycle sees at once.",
)
@click.option(
    "--order",
    default="arrival",
    show_default=True,
    type=click.Choice(["arrival", "largest"]),
    help="live: the order a cycle places its arrivals in.",
)
@_WORKERS
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write summary.json, runs.csv and curves.png here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def fgd(  # noqa: PLR0917 - click passes every option as an argument
    nodes_csv: Path,
    pods_csv: Path,
    policies: tuple[str, ...],
    seeds: str,
    ratio: float,
    grids: tuple[str, ...],
    cards: tuple[str, ...],
    rules: tuple[str, ...],
    batch: int,
    order: str,
    workers: int | None,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """The FGD protocol: GPU allocation as tasks arrive, no departures, no retries."""
    from sim import report
    from sim.cluster import Grid
    from sim.placer import CardChoice
    from sim.runner import (
        DEFAULT_POLICIES,
        LIVE,
        Job,
        Variant,
        parse_seeds,
        run_matrix,
        summarise,
    )

    try:
        seed_list = parse_seeds(seeds)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    nodes, tasks = _load_trace(nodes_csv, pods_csv)
    variants: list[Variant] = []
    if "ideal" in rules or not rules:
        variants += [
            Variant(Grid(GRIDS[g]), CardChoice(c))
            for g in (grids or ("raw",))
            for c in (cards or ("policy",))
        ]
    if "live" in rules:
        variants.append(replace(LIVE, batch=batch, order=order))
    chosen = policies or DEFAULT_POLICIES
    jobs = [
        Job(p, s, v, ratio)
        for v in variants
        for p in chosen
        if v.rules != "live" or not SCORERS[p].random_ties  # the daemon needs a fixed order
        for s in seed_list
    ]
    started = time.perf_counter()
    with progress_bar(len(jobs), "placing") as advance:
        results = run_matrix(nodes, tasks, jobs, workers=workers, progress=lambda _: advance())
    elapsed = time.perf_counter() - started
    summaries = summarise(results)
    data = {
        "nodes": str(nodes_csv),
        "pods": str(pods_csv),
        "seeds": list(seed_list),
        "ratio": ratio,
        "wall_seconds": round(elapsed, 1),
        "summary": report.summary_dict(summaries),
    }
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        report.write_json(out_dir / "summary.json", data)
        report.write_runs_csv(out_dir / "runs.csv", results)
        report.plot_curves(out_dir / "curves.png", summaries, pods_csv.stem)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(report.table(summaries))
        click.echo(f"\n{len(jobs)} runs in {elapsed:.1f} s wall")


QUEUE_POLICIES = ("fifo", "fair", "priority", "capacity")


@cli.command()
@click.option("--nodes", "nodes_csv", type=_CSV, required=True, help="Node list CSV.")
@click.option("--pods", "pods_csv", type=_CSV, required=True, help="Task list CSV with times.")
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(QUEUE_POLICIES),
    help="Queue policy set (repeat). Default: all four.",
)
@click.option(
    "--load",
    default=1.2,
    show_default=True,
    type=click.FloatRange(0.05, 20),
    help="Offered GPU load as a multiple of the slice's GPUs.",
)
@click.option(
    "--node-fraction",
    default=0.1,
    show_default=True,
    type=click.FloatRange(0.001, 1.0),
    help="Replay on every k-th node (k = 1/this).",
)
@click.option(
    "--tenants",
    "tenant_count",
    default=4,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Accounts the tasks are spread over.",
)
@click.option(
    "--max-runtime-h",
    default=24.0,
    show_default=True,
    type=click.FloatRange(0.01),
    help="Partition time limit: runtimes are cut there.",
)
@click.option(
    "--cycle",
    "cycle_s",
    default=60.0,
    show_default=True,
    type=click.FloatRange(0.01),
    help="Policy daemon cycle (virtual seconds).",
)
@click.option(
    "--placement",
    default="aipool",
    show_default=True,
    type=click.Choice(sorted(SCORERS)),
    help="Placement scorer for the node choice.",
)
@click.option(
    "--daemon-placement/--no-daemon-placement",
    default=True,
    show_default=True,
    help="Let the daemon's placement policy pin fractional jobs.",
)
@click.option(
    "--unpinned",
    default="scorer",
    show_default=True,
    type=click.Choice(["scorer", "weight"]),
    help="Node of work not pinned: the scorer's, or slurmctld's by the daemon's node Weight.",
)
@click.option(
    "--rules",
    default="ideal",
    show_default=True,
    type=click.Choice(["ideal", "live"]),
    help="live: what the live path does (every job deferred by the admission hook and "
    "pinned by the daemon at its submission, queued work placed by Weight); ideal: the "
    "settings above.",
)
@click.option(
    "--defer",
    "defer_s",
    default=15.0,
    show_default=True,
    type=click.FloatRange(0.01),
    help="live: the admission hook's deferral (seconds).",
)
@_WORKERS
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write replay.json and replay.png here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def replay(  # noqa: PLR0917 - click passes every option as an argument
    nodes_csv: Path,
    pods_csv: Path,
    policies: tuple[str, ...],
    load: float,
    node_fraction: float,
    tenant_count: int,
    max_runtime_h: float,
    cycle_s: float,
    placement: str,
    daemon_placement: bool,
    unpinned: str,
    rules: str,
    defer_s: float,
    workers: int | None,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """Replay a task list with departures and queueing under the queue policies."""
    from sim import report
    from sim.replay import ReplaySetup, run_replay
    from sim.trace import TraceError

    setup = ReplaySetup(
        load,
        node_fraction,
        tenant_count,
        max_runtime_h * 3600,
        cycle_s,
        placement,
        daemon_placement,
        unpinned,
        rules,
        defer_s,
    )
    nodes, tasks = _load_trace(nodes_csv, pods_csv)
    chosen = policies or QUEUE_POLICIES
    try:
        results = run_parallel(run_replay, [(nodes, tasks, p, setup) for p in chosen], workers)
    except TraceError as exc:
        raise click.ClickException(str(exc)) from exc
    data = {"pods": str(pods_csv), "setup": asdict(setup), "results": results}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        report.write_json(out_dir / "replay.json", data)
        report.plot_replay(out_dir / "replay.png", results, f"replay of {pods_csv.stem}")
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(
        "| policy | allocation while overloaded | overload (h) | jain (tenants) | requeued |"
    )
    click.echo("| --- | ---: | ---: | ---: | ---: |")
    for r in results:
        click.echo(
            f"| {r['policy']} | {r['alloc_overload']:.2f} % | {r['overload_hours']:.2f} | "
            f"{r['jain_tenants']:.3f} | {r['requeued']} |"
        )


@cli.command()
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(QUEUE_POLICIES),
    help="Queue policy set (repeat). Default: all four.",
)
@click.option(
    "--cycle",
    "cycle_s",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.01),
    help="Policy daemon cycle (virtual seconds).",
)
@click.option(
    "--fraction",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.001, 1.0),
    help="Share of each workload class to generate (1 = the full scenario).",
)
@_WORKERS
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write kueue.json and kueue.png here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def kueue(  # noqa: PLR0917 - click passes every option as an argument
    policies: tuple[str, ...],
    cycle_s: float,
    fraction: float,
    workers: int | None,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """Kueue's baseline performance scenario (5 cohorts x 6 queues) in virtual time."""
    from sim import report
    from sim.kueue import KUEUE_REPORTED

    chosen = policies or QUEUE_POLICIES
    results = run_parallel(kueue_one, [(p, cycle_s, fraction) for p in chosen], workers)
    data = {"kueue_reported": KUEUE_REPORTED, "cycle_s": cycle_s, "results": results}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        report.write_json(out_dir / "kueue.json", data)
        report.plot_kueue(out_dir / "kueue.png", results, KUEUE_REPORTED)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo("| policy | queue usage | large (s) | medium (s) | small (s) | evictions |")
    click.echo("| --- | ---: | ---: | ---: | ---: | ---: |")
    k = KUEUE_REPORTED
    click.echo(
        f"| kueue (reported) | {k['min_usage']} % | {k['large']} | {k['medium']} | "
        f"{k['small']} | - |"
    )
    for r in results:
        click.echo(
            f"| {r['policy']} | {r['min_usage']:.1f} % | {r['large']:.1f} | {r['medium']:.1f} | "
            f"{r['small']:.1f} | {r['evictions']:.0f} |"
        )


@cli.command()
@click.option(
    "--nodes",
    "nodes_json",
    type=_JSON,
    required=True,
    help="The lab's GPU and NPU nodes, idle (JSON list, as tests/data/sim/lab_nodes.json).",
)
@click.option(
    "--slice", "slice_csv", type=_CSV, required=True, help="A lab slice (aipool sim slice)."
)
@click.option("--policy", default="aipool", show_default=True, type=click.Choice(sorted(SCORERS)))
@click.option(
    "--slurm-release",
    default="22.05",
    show_default=True,
    help="The Slurm whose card marks are modelled (MAJOR.MINOR, e.g. 24.11).",
)
def predict(nodes_json: Path, slice_csv: Path, policy: str, slurm_release: str) -> None:
    """Where the live path places a lab slice: the daemon's engine on a copy of the lab
    (JSON, for ``aipool sim agree``)."""
    from sim.labslice import load_nodes, load_slice, predict_live

    try:
        nodes, tasks = load_nodes(nodes_json), load_slice(slice_csv)
    except (ValueError, KeyError) as exc:
        raise click.ClickException(f"{exc}") from exc
    major, _, minor = slurm_release.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise click.BadParameter(
            f"{slurm_release!r} is not MAJOR.MINOR", param_hint="--slurm-release"
        )
    placements = predict_live(nodes, tasks, scorer=policy, release=(int(major), int(minor)))
    click.echo(json.dumps({"policy": policy, "placements": placements}, indent=2))


@cli.command("slice")
@click.option("--pods", "pods_csv", type=_CSV, required=True, help="The trace's tasks as CSV.")
@click.option("--start", default=0, show_default=True, type=click.IntRange(0))
@click.option("--count", default=210, show_default=True, type=click.IntRange(1))
@click.option("--batch", default=3, show_default=True, type=click.IntRange(1), help="Tasks a step.")
def slice_(pods_csv: Path, start: int, count: int, batch: int) -> None:
    """Trace tasks as lab jobs of every shape, with arrival and leaving steps (CSV on
    stdout, for predict and the lab check)."""
    import sys

    from sim.labslice import make_slice, write_rows
    from sim.trace import TraceError, load_tasks

    try:
        tasks = make_slice(load_tasks(pods_csv), start=start, count=count, batch=batch)
    except TraceError as exc:
        raise click.ClickException(str(exc)) from exc
    write_rows(tasks, sys.stdout)


@cli.command()
@click.argument("predicted", type=_JSON)
@click.argument("observed", type=_JSON)
def agree(predicted: Path, observed: Path) -> None:
    """Share of jobs the lab placed on the node (and cards) the simulator predicted."""
    from sim.consistency import agreement, load_placements

    try:
        result = agreement(load_placements(predicted), load_placements(observed))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(result, indent=2))
