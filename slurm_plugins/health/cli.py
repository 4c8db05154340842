"""``aipool health``: check nodes once (``check``), keep checking (``run``), or show what
the node agents last reported (``show``).

Both read the ``health:`` section of the policy daemon's configuration (docs/health.md);
``check --dry-run`` shows verdicts and what would change without changing anything. A
configuration without that section, or one that does not validate, exits with 2.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from plumbing import codec
from plumbing.cli import fail, load_or_exit
from plumbing.errors import ConfigError
from slurm_plugins.client.daemon import slurm_client
from slurm_plugins.health.config import HealthConfig
from slurm_plugins.policy.config import LAB_CONFIG, DaemonConfig, load_config

if TYPE_CHECKING:
    from slurm_plugins.health.checker import Checker
    from slurm_plugins.health.metrics import HealthMetrics
    from slurm_plugins.node import Seen

log = logging.getLogger("aipool.health")


def _config(config_path: Path) -> tuple[DaemonConfig, HealthConfig]:
    config = load_or_exit(load_config, config_path)
    if config.health is None:
        fail([f"{config_path}: no health: section (see docs/health.md)"], 2)
    return config, config.health


def _checker(config_path: Path, dry_run: bool) -> Checker:
    from slurm_plugins.health.checker import Checker
    from slurm_plugins.node.health import probe_clock
    from slurm_plugins.policy.daemon import notifier_for

    config, health = _config(config_path)
    try:
        notifier = notifier_for(config)
    except ConfigError as exc:  # notify.email names a file that does not validate
        fail(exc.messages, 2)
    return Checker(
        health,
        slurm_client(config.env, dry_run=dry_run),
        notifier,
        state_dir=config.state_dir,
        admins=config.engine.admins,
        controller_clock=probe_clock,
    )


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=LAB_CONFIG,
    show_default="the lab configuration",
    help="Policy daemon configuration (YAML) with a health: section.",
)


@click.command()
@config_option
@click.option("--dry-run", is_flag=True, help="Show verdicts and changes; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="The plan as JSON.")
def check(config_path: Path, dry_run: bool, as_json: bool) -> None:
    """Check every node once: drain failing nodes, return recovered ones, alert."""
    from slurm_plugins.client import SlurmError
    from slurm_plugins.health.checker import CheckerLocked

    checker = _checker(config_path, dry_run)
    try:
        with checker.store.locked():
            report = checker.check()
    except (SlurmError, CheckerLocked) as exc:
        fail([str(exc)], 1)
    if as_json:
        data = {**codec.dump(report.plan), "failed": report.failed}
        click.echo(json.dumps(data, indent=1, sort_keys=True))
    else:
        click.echo("\n".join(report.lines()) or "no nodes")


@click.command()
@config_option
@click.option("--dry-run", is_flag=True, help="Log what each check would do; change nothing.")
def run(config_path: Path, dry_run: bool) -> None:
    """Check every health.interval until stopped (one checker per state directory)."""
    from plumbing.metrics import serve
    from slurm_plugins.health.checker import CheckerLocked
    from slurm_plugins.health.metrics import HealthMetrics

    checker = _checker(config_path, dry_run)
    config, health = _config(config_path)
    metrics = None
    if health.metrics is not None:
        metrics = HealthMetrics(config.metrics.cluster if config.metrics else "default")
    try:
        server = serve(metrics.registry, health.metrics) if metrics is not None else None
    except OSError as exc:  # the port is taken, the address is not this host's
        fail([f"health.metrics {health.metrics}: {exc}"], 2)
    try:
        with checker.store.locked():
            while True:
                _check_once(checker, metrics)
                time.sleep(checker.config.interval_s)
    except CheckerLocked as exc:
        fail([str(exc)], 1)
    finally:
        if server is not None:
            server.close()


def _check_once(checker: Checker, metrics: HealthMetrics | None) -> None:
    """One check of ``run``: Slurm being unreachable (slurmctld restarting) is logged and
    counted; the next check retries."""
    from slurm_plugins.client import SlurmError

    t0 = time.monotonic()
    try:
        report = checker.check()
    except SlurmError as exc:
        log.error("health check failed: %s", exc)
        if metrics is not None:
            metrics.failed()
        return
    if metrics is not None:
        metrics.checked(report, time.monotonic() - t0)
    for line in report.lines():
        log.info("%s", line)


def _mb(bps: float) -> str:
    return f"{bps / 1e6:.1f}"


def describe(node: str, seen: Seen, now: float) -> list[str]:
    """A node's last report in a few lines: age, clock, devices, I/O rates, file systems."""
    r = seen.report
    if r is None:
        return [f"{node}: {seen.error}"]
    clock = r.clock
    offset = "?" if clock.offset_s is None else f"{clock.offset_s:+.3f} s"
    sync = {True: "synchronised", False: "NOT synchronised", None: "sync unknown"}
    bad = [d for d in r.devices if d.errors]
    lines = [
        f"{node}: report {now - seen.mtime:.0f} s old; clock {offset} ({clock.source}, "
        f"{sync[clock.synchronised]}); {len(r.devices)} device(s), {len(bad)} with errors"
        + (f"; probe errors: {'; '.join(r.probe_errors)}" if r.probe_errors else "")
    ]
    lines += [f"  {d.kind} {d.index}: {', '.join(d.errors)}" for d in bad]
    for key, rate in sorted(r.rates.items()):
        kind, _, name = key.partition(":")
        if kind == "net":
            lines.append(
                f"  {name}: in {_mb(rate.in_bps)} MB/s, out {_mb(rate.out_bps)} MB/s, "
                f"{rate.errors_ps:.1f} errors+drops/s"
            )
        else:
            lines.append(
                f"  {name}: read {_mb(rate.in_bps)} MB/s, write {_mb(rate.out_bps)} MB/s, "
                f"busy {rate.busy:.0%}"
            )
    for mount, u in sorted(r.fs.items()):
        if u.total:
            lines.append(f"  {mount}: {u.used / u.total:.0%} of {u.total / 1e9:.0f} GB used")
    return lines


@click.command()
@config_option
@click.option("--node", "nodes", multiple=True, help="Only this node (repeatable).")
def show(config_path: Path, nodes: tuple[str, ...]) -> None:
    """The node agents' last reports: clock, devices, network and disk rates."""
    from slurm_plugins.node import read_reports

    _, health = _config(config_path)
    if health.reports is None:
        fail([f"{config_path}: health.reports (or samples.dir) is not set"], 2)
    seen = read_reports(health.reports)
    missing = [n for n in nodes if n not in seen]
    now = time.time()
    for node in nodes or tuple(sorted(seen)):
        if node in seen:
            click.echo("\n".join(describe(node, seen[node], now)))
    if missing:
        fail([f"no report from {', '.join(missing)} in {health.reports}"], 1)


@click.group(name="health")
def cli() -> None:
    """Node health: drain failing nodes, return them when healthy, alert the admins."""


cli.add_command(check)
cli.add_command(run)
cli.add_command(show)
