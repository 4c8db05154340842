"""One pass of the node agent: sample, write the samples, publish the cards to the
metrics, write the health report. The command (:mod:`slurm_plugins.node.cli`) repeats it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from slurm_plugins.node.health import HealthReporter, report_health
from slurm_plugins.node.metrics import CardView, NodeMetrics
from slurm_plugins.node.samples import write_samples
from slurm_plugins.node.sources import Source


@dataclass
class Agent:
    """What the agent holds across passes; ``metrics`` only when ``--metrics`` was given."""

    source: Source
    out: Path
    node: str
    reporter: HealthReporter | None = None
    metrics: NodeMetrics | None = None
    cluster: str = "default"
    clock: Callable[[], float] = field(default=time.time)

    def run_once(self) -> int:
        """One pass; returns how many job samples it wrote."""
        samples = self.source.sample()
        write_samples(self.out, self.node, samples, self.clock())
        if self.metrics is not None:  # the cards the sampling just read, for the next scrape
            self.metrics.saw(CardView(self.cluster, self.node, self.source.devices))
        if self.reporter is not None:
            report_health(self.out, self.reporter)
        return len(samples)
