"""Commands of the policy daemon, for the ``aipool policy`` group.

``run`` (the daemon: ``--once``, ``--dry-run``, ``--dump-snapshot``, ``--replay``),
``why`` (the reasons kept for a job) and ``release-holds`` (hand back every hold the daemon
made, e.g. before removing it). :data:`COMMANDS` lists them so the group can add them;
``python -m slurm_plugins.policy`` runs them standalone. The node agent is
``aipool node agent`` (:mod:`slurm_plugins.node.cli`).
A configuration that does not validate prints every ``path: message`` and exits with 2.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import click

from plumbing import codec
from plumbing.cli import fail, load_or_exit
from slurm_plugins.client.daemon import slurm_client
from slurm_plugins.policy.config import LAB_CONFIG, DaemonConfig, load_config
from slurm_plugins.policy.plan import Plan

log = logging.getLogger("aipool.policy")


def _config(path: Path) -> DaemonConfig:
    return load_or_exit(load_config, path)


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
            fail([f"{replay}: {exc}"], 2)
        _show(plan(snap, config.engine), as_json)
        return
    from slurm_plugins.client import SlurmError
    from slurm_plugins.policy.daemon import Daemon
    from slurm_plugins.policy.state import StateLocked

    daemon = Daemon(config, slurm_client(config.env, dry_run=dry_run), dump_snapshot=dump_snapshot)
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
        fail([str(exc)], 1)
    except SlurmError as exc:
        fail([f"Slurm: {exc}"], 1)


@click.command()
@config_option
@click.argument("job_id", type=int)
def why(config_path: Path, job_id: int) -> None:
    """What the policy daemon last decided about JOB_ID, and why."""
    from slurm_plugins.policy.state import reasons_for

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

    from slurm_plugins.policy.state import StateStore

    config = _config(config_path)
    store = StateStore(config.state_dir)
    with store.locked():
        state = store.load()
        ids = sorted(state.holds)
        client = slurm_client(config.env, dry_run=dry_run)
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


COMMANDS = (run, why, release_holds)


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
