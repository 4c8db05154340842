"""Commands of the policy daemon, for the ``aipool policy`` group.

``run`` (the daemon: ``--once``, ``--dry-run``, ``--dump-snapshot``, ``--replay``),
``why`` (the reasons kept for a job), ``release-holds`` (hand back every hold the daemon
made, e.g. before removing it) and ``agent`` (the node agent). :data:`COMMANDS` lists them
so the group can add them; ``python -m slurm_plugins.policy`` runs them standalone.
A configuration that does not validate prints every ``path: message`` and exits with 2.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from slurm_plugins.policy import codec
from slurm_plugins.policy.config import LAB_CONFIG, ConfigError, DaemonConfig, load_config
from slurm_plugins.policy.plan import Plan

if TYPE_CHECKING:
    from slurm_plugins.client import SlurmClient

log = logging.getLogger("aipool.policy")


def _fail(messages: tuple[str, ...] | list[str], code: int) -> NoReturn:
    for m in messages:
        click.echo(f"error: {m}", err=True)
    raise click.exceptions.Exit(code)


def _config(path: Path) -> DaemonConfig:
    try:
        return load_config(path)
    except ConfigError as exc:
        _fail(exc.messages, 2)


def _client(config: DaemonConfig, dry_run: bool) -> SlurmClient:
    from slurm_plugins.client import SlurmClient

    env = dict(config.env)
    if "SLURM_CONF" not in env and os.environ.get("SLURM_CONF"):
        env["SLURM_CONF"] = os.environ["SLURM_CONF"]
    return SlurmClient(env=env or None, dry_run=dry_run, timeout=60)


def render_plan(plan: Plan, *, limit: int = 50) -> list[str]:
    """Human-readable lines: a summary, then each change with its reason."""
    counts = ", ".join(f"{k} {v}" for k, v in plan.summary().items() if v)
    lines = [
        f"plan at {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(plan.now))} UTC: "
        f"{len(plan.order)} pending; {counts or 'nothing to change'}"
    ]
    items: list[str] = []
    items += [f"hold {h.job_id}: {h.reason}" for h in plan.holds]
    items += [f"release {h.job_id}: {h.reason}" for h in plan.releases]
    items += [f"{a.action.value} {a.job_id}: {a.reason}" for a in plan.actions]
    for c in plan.job_changes:
        fields = [
            f"{k}={v}"
            for k, v in (
                ("SiteFactor", c.site_factor),
                ("ReqNodeList", c.req_nodes),
                ("ExcNodeList", c.exc_nodes),
            )
            if v is not None
        ]
        items.append(f"update {c.job_id} {' '.join(fields)}: {c.reason}")
    items += [f"weight {w.node}={w.weight}: {w.reason}" for w in plan.node_weights]
    items += [f"notify {','.join(n.users)}: {n.subject}" for n in plan.notifications]
    lines += [f"  {i}" for i in items[:limit]]
    if len(items) > limit:
        lines.append(f"  … and {len(items) - limit} more (--json shows all)")
    return lines


def _show(plan: Plan, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(codec.dump(plan), indent=1, sort_keys=True))
    else:
        click.echo("\n".join(render_plan(plan)))


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=LAB_CONFIG,
    show_default="the lab configuration",
    help="Daemon configuration (YAML).",
)


@click.command()
@config_option
@click.option("--once", is_flag=True, help="Run one cycle and exit.")
@click.option("--dry-run", is_flag=True, help="Plan and show, change nothing (not even state).")
@click.option(
    "--dump-snapshot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write each cycle's snapshot (JSON) here.",
)
@click.option(
    "--replay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Plan a dumped snapshot offline; never talks to Slurm.",
)
@click.option("--json", "as_json", is_flag=True, help="Print plans as JSON.")
def run(
    *,
    config_path: Path,
    once: bool,
    dry_run: bool,
    dump_snapshot: Path | None,
    replay: Path | None,
    as_json: bool,
) -> None:
    """The policy daemon: steer Slurm by the configured policies."""
    config = _config(config_path)
    if replay is not None:
        from slurm_plugins.policy.engine import plan
        from slurm_plugins.policy.snapshot import Snapshot

        try:
            snap = Snapshot.load(replay)
        except ValueError as exc:
            _fail([f"{replay}: {exc}"], 2)
        _show(plan(snap, config.engine), as_json)
        return
    from slurm_plugins.client import SlurmError
    from slurm_plugins.policy.daemon import Daemon
    from slurm_plugins.policy.store import StateLocked

    daemon = Daemon(config, _client(config, dry_run), dump_snapshot=dump_snapshot)
    try:
        if once or dry_run:
            with daemon.store.locked() if not dry_run else nullcontext():
                report = daemon.cycle()
            if report is not None:
                _show(report.plan, as_json)
                if not as_json:
                    click.echo(report.line())
            return
        daemon.run_forever()
    except StateLocked as exc:
        _fail([str(exc)], 1)
    except SlurmError as exc:
        _fail([f"Slurm: {exc}"], 1)


@click.command()
@config_option
@click.argument("job_id", type=int)
def why(config_path: Path, job_id: int) -> None:
    """What the policy daemon last decided about JOB_ID, and why."""
    from slurm_plugins.policy.store import reasons_for

    reasons = reasons_for(job_id, _config(config_path).state_dir)
    if not reasons:
        click.echo(f"job {job_id}: no decisions recorded")
        sys.exit(1)
    for r in reasons:
        click.echo(f"job {job_id}: {r}")


@click.command("release-holds")
@config_option
@click.option("--dry-run", is_flag=True)
def release_holds(config_path: Path, dry_run: bool) -> None:
    """Hand back what the daemon holds: release its holds, restore node weights it changed.

    Run it with the daemon stopped, e.g. before removing the daemon.
    """
    from dataclasses import replace

    from slurm_plugins.policy.store import StateStore

    config = _config(config_path)
    store = StateStore(config.state_dir)
    with store.locked():
        state = store.load()
        ids = sorted(state.holds)
        client = _client(config, dry_run)
        if ids:
            client.release(ids)
        by_weight: dict[int, list[str]] = {}
        for node, weight in state.base_weights.items():
            by_weight.setdefault(weight, []).append(node)
        for weight, nodes in sorted(by_weight.items()):
            client.update_node(",".join(sorted(nodes)), weight=weight)
        if not dry_run:
            store.save(replace(state, holds={}, base_weights={}))
    click.echo(f"released {len(ids)} job(s): {', '.join(map(str, ids)) or 'none held'}")
    if state.base_weights:
        click.echo(f"restored the weight of {len(state.base_weights)} node(s)")


@click.command()
@click.option(
    "--source",
    default="nvml",
    show_default=True,
    help="nvml, npu-smi, file:DIR (DIR/<job id> holds a percentage) or lab:DIR (the lab: "
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
) -> None:
    """Node agent: per-job utilisation samples for the idle reaper, node health reports."""
    from slurm_plugins.policy.agent import health_reporter, report_health, write_samples
    from slurm_plugins.policy.agent import source as make_source

    try:
        src = make_source(source, node)
        reporter = (
            health_reporter(source, node, inventory=inventory, faults=faults) if health else None
        )
    except (ValueError, ImportError) as exc:  # InventoryError is a ValueError
        _fail([str(exc)], 2)
    while True:
        samples = src.sample()
        write_samples(out, node, samples, time.time())
        if reporter is not None:
            report_health(out, reporter)
        if once:
            click.echo(f"{node}: {len(samples)} job sample(s) written to {out}")
            return
        time.sleep(interval)


COMMANDS = (run, why, release_holds, agent)


@click.group(name="policy")
@click.option("-v", "--verbose", count=True)
def main(verbose: int) -> None:
    """The policy daemon (standalone; ``aipool policy`` holds the same commands)."""
    logging.basicConfig(
        level=logging.WARNING - 10 * min(verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


for _cmd in COMMANDS:
    main.add_command(_cmd)
