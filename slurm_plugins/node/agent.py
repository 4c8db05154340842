"""One pass of the node agent: sample, write the samples, write the health report, publish
what the pass read to the metrics. The command (:mod:`slurm_plugins.node.cli`) repeats it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gres.device import DeviceHealth
from slurm_plugins.node.health import HealthReporter
from slurm_plugins.node.metrics import CardView, HostReading, NodeMetrics, read_host
from slurm_plugins.node.report import write_report
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
    #: the node's own figures for the metrics (psutil)
    host: Callable[[], HostReading] = field(default=read_host)

    def run_once(self) -> int:
        """One pass; returns how many job samples it wrote."""
        samples = self.source.sample()
        # sources that read no power (the file source) have no ``watts``: no energy then
        watts = getattr(self.source, "watts", None)
        power = getattr(self.source, "power", "measured")
        write_samples(self.out, self.node, samples, self.clock(), watts=watts, power=power)
        health: tuple[DeviceHealth, ...] = ()
        if self.reporter is not None:
            report = self.reporter.report()
            write_report(self.out, report)
            health = report.devices
        if self.metrics is not None:  # what this pass read, for the scrapes until the next
            view = CardView(self.cluster, self.node, self.source.devices, health, self.host())
            self.metrics.saw(view)
        return len(samples)
