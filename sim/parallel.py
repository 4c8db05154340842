"""Running simulations side by side in worker processes, with a progress bar."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any


def kueue_one(policy: str, cycle_s: float, fraction: float) -> dict[str, Any]:
    from sim.kueue import run_kueue

    return run_kueue(policy, cycle_s=cycle_s, fraction=fraction)


def run_parallel(
    fn: Callable[..., dict[str, Any]], calls: Sequence[tuple[Any, ...]], workers: int | None
) -> list[dict[str, Any]]:
    """``fn(*args)`` for each call, in processes when there are several; in call order."""
    count = min(workers or os.cpu_count() or 1, len(calls))
    with progress_bar(len(calls), "simulating") as advance:
        if count <= 1:
            out = []
            for args in calls:
                out.append(fn(*args))
                advance()
            return out
        with ProcessPoolExecutor(count) as pool:
            futures = [pool.submit(fn, *args) for args in calls]
            for future in as_completed(futures):
                future.result()
                advance()
            return [f.result() for f in futures]


@contextmanager
def progress_bar(total: int, what: str) -> Iterator[Callable[[], None]]:
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
