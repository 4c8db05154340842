"""``aipool gres score``: a short benchmark job per node kind, through the Slurm client.

One job per kind of node (by its card's GRES type; ``cpu`` for nodes without cards) runs
``python -m gres.bench`` from the job runtime on one available node of that kind and writes
its scores to a shared directory; ``run`` waits for them (with a deadline) and merges them
into the scores file the portal reads (:mod:`gres.scores`).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import click

from accounting.edge import lab_option, slurm_client
from gres.scores import Score, from_dict, load_scores, merge_scores, save_scores
from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.client.errors import JobNotFound
from slurm_plugins.client.job import Component, Gres, JobRequest
from slurm_plugins.client.models import Node

#: the GRES names that are cards (shards and vNPU types are parts of them)
CARD_GRES = ("gpu", "npu", "mlu", "dcu", "xpu")
DEFAULT_STORE = Path("/var/lib/aipool/scores.json")


@dataclass(frozen=True, slots=True)
class Kind:
    """A node kind and the node its benchmark runs on."""

    kind: str
    gres: str  # "gpu", "npu" …, or "" for a node without cards
    node: str
    partition: str | None


def kinds_of(nodes: Iterable[Node]) -> list[Kind]:
    """One available node per kind, the first by name; a node's kind is its first card type."""
    out: dict[str, Kind] = {}
    for n in sorted(nodes, key=lambda n: n.name):
        if not n.available:
            continue
        cards = [g for g in n.gres if g.name in CARD_GRES and g.type]
        kind, gres = (cards[0].type or "", cards[0].name) if cards else ("cpu", "")
        partition = n.partitions[0] if n.partitions else None
        out.setdefault(kind, Kind(kind, gres, n.name, partition))
    return sorted(out.values(), key=lambda k: k.kind)


def job_for(
    k: Kind, out_dir: Path, python: str, account: str | None
) -> tuple[str, JobRequest, Path]:
    """The batch script, the request and the file the scores will be in."""
    result = out_dir / f"score-{k.kind}.json"
    argv = [python, "-m", "gres.bench", "--kind", k.kind, "--node", k.node, "--out", str(result)]
    script = "#!/bin/bash\nset -euo pipefail\nexec " + shlex.join(argv) + "\n"
    comp = Component(
        account=account,
        partition=k.partition,
        time_limit=10,
        nodes=1,
        tasks=1,
        gres=(Gres(k.gres, 1, k.kind),) if k.gres else (),
        nodelist=(k.node,),
    )
    request = JobRequest(
        components=(comp,),
        name=f"aipool-score-{k.kind}",
        workdir=str(out_dir),
        output=str(out_dir / f"score-{k.kind}-%j.out"),
        environment={},
    )
    return script, request, result


def wait_for(
    client: SlurmClient,
    job_ids: Iterable[int],
    deadline_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> set[int]:
    """Wait until the jobs have left the queue or the deadline passes; the ones still there."""
    left, end = set(job_ids), clock() + deadline_s
    while left and clock() < end:
        for j in sorted(left):
            try:
                if client.job(j).state.is_finished:
                    left.discard(j)
            except JobNotFound:
                left.discard(j)
        if left:
            sleep(1.0)
    return left


def read_result(path: Path) -> list[Score]:
    try:
        return [from_dict(d) for d in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, KeyError, TypeError):
        return []


@click.group("score")
def score() -> None:
    """Compute scores per node kind: a benchmark job each, and the stored results."""


@score.command("run")
@lab_option
@click.option("--store", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_STORE)
@click.option(
    "--out-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="a directory every node can write and this host read (the jobs' results)",
)
@click.option("--python", default="/opt/aipool/runtime/bin/python", show_default=True)
@click.option("--account", help="the Slurm account the jobs are charged to")
@click.option("--timeout", default=600, show_default=True, type=click.IntRange(10, 7200))
def run(  # noqa: PLR0917 (one parameter per option)
    lab: bool, store: Path, out_dir: Path, python: str, account: str | None, timeout: int
) -> None:
    """Submit one benchmark job per node kind, wait, and store what they measured."""
    client = slurm_client(lab)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        kinds = kinds_of(client.nodes())
        jobs = {}
        for k in kinds:
            script, request, result = job_for(k, out_dir, python, account)
            jobs[client.submit(script, request)] = (k, result)
            click.echo(f"{k.kind}: job submitted on {k.node}")
        left = wait_for(client, jobs, timeout)
    except SlurmError as exc:
        raise click.ClickException(str(exc)) from exc
    got: list[Score] = []
    for job_id, (k, result) in sorted(jobs.items()):
        scores = read_result(result)
        if job_id in left or not scores:
            click.echo(f"{k.kind}: no result from job {job_id} (see {out_dir})", err=True)
        got += scores
    save_scores(store, merge_scores(load_scores(store), got))
    _print(got)
    if len(got) == 0 or left:
        raise SystemExit(1)


@score.command("show")
@click.option("--store", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_STORE)
def show(store: Path) -> None:
    """The stored scores."""
    _print(load_scores(store))


def _print(scores: Iterable[Score]) -> None:
    for s in scores:
        click.echo(f"{s.kind:10} {s.precision.value:5} {s.tflops:10.1f}  {s.source:12} {s.node}")
