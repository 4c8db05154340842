"""``aipool node agent``: the node agent, one per Slurm node.

Every interval it writes the utilisation of each job's devices (``<out>/<node>.jsonl``,
read by the policy daemon's idle reaper and the portal's job charts) and, unless
``--no-health``, the node's health report (``<out>/<node>.health.json``, read by
``aipool health``). With ``--metrics HOST:PORT`` it also serves its cards' readings on
``http://HOST:PORT/metrics`` (nothing is bound without it). Bad options exit with 2.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import click

from plumbing.cli import fail


@click.command()
@click.option(
    "--source",
    default="nvml",
    show_default=True,
    help="nvml, npu-smi, cnmon, hy-smi, xpu-smi, file:DIR (DIR/<job id> holds a percentage) "
    "or lab:DIR (the lab: "
    "a job's CPU load stands in for its cards', DIR/<job id> overrides).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Shared samples directory the daemon reads.",
)
@click.option(
    "--node",
    default=lambda: socket.gethostname().split(".")[0],
    help="Slurm node name [default: short hostname].",
)
@click.option("--interval", type=float, default=30.0, show_default=True)
@click.option("--once", is_flag=True)
@click.option("--health/--no-health", default=True, help="Also write <node>.health.json.")
@click.option("--inventory", type=click.Path(dir_okay=False, path_type=Path), help="Lab devices.")
@click.option("--faults", type=click.Path(dir_okay=False, path_type=Path), help="Lab faults.")
@click.option(
    "--metrics",
    "metrics_at",
    metavar="HOST:PORT",
    help="Serve the cards' metrics on http://HOST:PORT/metrics (e.g. 127.0.0.1:9102); "
    "off unless given.",
)
@click.option("--cluster", default="default", show_default=True, help="The metrics' cluster label.")
def agent(
    *,
    source: str,
    out: Path,
    node: str,
    interval: float,
    once: bool,
    health: bool,
    inventory: Path | None,
    faults: Path | None,
    metrics_at: str | None,
    cluster: str,
) -> None:
    """Node agent: per-job utilisation samples for the idle reaper, node health reports."""
    from gres.accel import SOURCE_NAMES
    from plumbing.address import parse_address
    from plumbing.metrics import serve
    from slurm_plugins.node.agent import Agent
    from slurm_plugins.node.health import health_reporter
    from slurm_plugins.node.metrics import NodeMetrics
    from slurm_plugins.node.sources import AccelSmi, NpuSmi
    from slurm_plugins.node.sources import source as make_source

    try:
        address = parse_address(metrics_at) if metrics_at is not None else None
    except ValueError as exc:
        fail([f"--metrics: {exc}"], 2)
    # One tool run per interval serves both the samples and the health.
    npu_smi = NpuSmi()
    accel_smi = AccelSmi(SOURCE_NAMES[source]) if source in SOURCE_NAMES else None
    try:
        src = make_source(source, node, npu_smi=npu_smi, accel_smi=accel_smi)
        reporter = (
            health_reporter(
                source,
                node,
                inventory=inventory,
                faults=faults,
                npu_smi=npu_smi,
                accel_smi=accel_smi,
            )
            if health
            else None
        )
    except (ValueError, ImportError) as exc:  # InventoryError is a ValueError
        fail([str(exc)], 2)
    metrics = NodeMetrics() if address is not None else None
    run = Agent(src, out, node, reporter, metrics, cluster)
    try:
        server = serve(metrics.registry, address) if metrics is not None else None
    except OSError as exc:  # the port is taken, the address is not this host's
        fail([f"--metrics {metrics_at}: {exc}"], 2)
    try:
        while True:
            n = run.run_once()
            if once:
                served = f"; metrics on http://{server.address}/metrics" if server else ""
                click.echo(f"{node}: {n} job sample(s) written to {out}{served}")
                return
            time.sleep(interval)
    finally:
        if server is not None:
            server.close()


@click.group(name="node")
def cli() -> None:
    """What runs on every compute node: the node agent."""


cli.add_command(agent)
