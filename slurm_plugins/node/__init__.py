"""The node side: the node agent (per-job device utilisation, node health reports), the
device and clock probes it takes them with, and the files it writes.

Readers import from here: the policy daemon and the portal read samples
(:class:`SampleReader`, :class:`Sample`), the health checker reads reports
(:func:`read_reports`, :class:`NodeReport`, :class:`Seen`); the command is
:mod:`slurm_plugins.node.cli`.
"""

from __future__ import annotations

from slurm_plugins.node.report import Clock, NodeReport, Seen, read_reports, write_report
from slurm_plugins.node.samples import Sample, SampleReader, write_samples

__all__ = [
    "Clock",
    "NodeReport",
    "Sample",
    "SampleReader",
    "Seen",
    "read_reports",
    "write_report",
    "write_samples",
]
