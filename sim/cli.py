"""``aipool sim``: run the simulator from the command line.

``aipool sim fgd --nodes NODES.csv --pods PODS.csv --policy fgd --policy aipool --json``
runs the FGD paper's protocol on any node and task list in the Alibaba trace's CSV format.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from gres.placement import SCORERS

GRIDS = {"raw": 1000, "shards": 32}


@click.group()
def cli() -> None:
    """Trace-driven simulation of AIPool's placement and queue policies."""


@cli.command()
@click.option(
    "--nodes",
    "nodes_csv",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Node list: sn,cpu_milli,memory_mib,gpu,model.",
)
@click.option(
    "--pods",
    "pods_csv",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
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
    "--jobs",
    "workers",
    type=click.IntRange(1, 256),
    default=None,
    help="Worker processes (default: CPU count).",
)
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
    workers: int | None,
    out_dir: Path | None,
    as_json: bool,
) -> None:
    """The FGD protocol: GPU allocation as tasks arrive, no departures, no retries."""
    from sim import report
    from sim.cluster import Grid
    from sim.placer import CardChoice
    from sim.runner import DEFAULT_POLICIES, Job, Variant, parse_seeds, run_matrix, summarise
    from sim.trace import TraceError, load_nodes, load_tasks

    try:
        seed_list = parse_seeds(seeds)
        nodes, tasks = load_nodes(nodes_csv), load_tasks(pods_csv)
    except (ValueError, TraceError) as exc:
        raise click.ClickException(str(exc)) from exc
    variants = [
        Variant(Grid(GRIDS[g]), CardChoice(c))
        for g in (grids or ("raw",))
        for c in (cards or ("policy",))
    ]
    jobs = [
        Job(p, s, v, ratio)
        for v in variants
        for p in (policies or DEFAULT_POLICIES)
        for s in seed_list
    ]
    started = time.perf_counter()
    with _progress(len(jobs), "placing") as advance:
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


@contextmanager
def _progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A rich progress bar on stderr; silent when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task(what, total=total)
        yield lambda: bar.advance(task)
