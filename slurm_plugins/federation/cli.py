"""``aipool clusters``: nodes, free capacity and queues of every cluster; ``pick`` shows the
first level's choice for a request without submitting anything."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.federation import snapshot
from slurm_plugins.federation.choose import policy_from_env
from slurm_plugins.federation.model import NoClusterFits, request_for
from slurm_plugins.federation.pick import pick_cluster
from slurm_plugins.federation.policy import PolicyError


def _client(ctx: click.Context) -> SlurmClient:
    obj = ctx.find_object(dict) or {}
    client = obj.get("slurm_client")
    return client if isinstance(client, SlurmClient) else SlurmClient()


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def clusters(ctx: click.Context, as_json: bool) -> None:
    """Every cluster slurmdbd knows (sinfo/squeue -M per cluster): nodes and queues."""
    if ctx.invoked_subcommand is not None:
        return
    client = _client(ctx)
    try:
        names = client.clusters()
        rows: list[dict[str, Any]] = []
        for name in names:
            on = client.on(name)
            try:
                nodes, jobs = on.nodes(), on.jobs()
            except SlurmError as exc:
                rows.append({"cluster": name, "reachable": False, "error": str(exc)})
                continue
            rows.append(
                {
                    "cluster": name,
                    "reachable": True,
                    "running": sum(1 for j in jobs if j.is_running),
                    "pending": sum(1 for j in jobs if j.is_pending),
                    "nodes": [
                        {
                            "name": n.name,
                            "state": n.state.value.lower(),
                            "partitions": list(n.partitions),
                            "cpus": f"{n.alloc_cpus}/{n.cpus}",
                            "free": {
                                k: v
                                for k, v in asdict(snapshot.node_free(n)).items()
                                if k in ("cpus", "gpus", "shards", "npus")
                            },
                        }
                        for n in nodes
                    ],
                }
            )
    except SlurmError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        if not row["reachable"]:
            click.echo(f"{row['cluster']}: NOT ANSWERING ({row['error']})")
            continue
        click.echo(f"{row['cluster']}: {row['running']} running, {row['pending']} pending")
        for n in row["nodes"]:
            free = n["free"]
            accel = ", ".join(
                f"{kind} {model or '-'} {count}"
                for kind in ("gpus", "shards", "npus")
                for model, count in free[kind].items()
            )
            click.echo(
                f"  {n['name']:<10} {n['state']:<10} {','.join(n['partitions']):<10} "
                f"cpus used {n['cpus']:<7} free: cpus {free['cpus']}{', ' + accel if accel else ''}"
            )


@clusters.command("pick")
@click.option("--gpus", type=float, default=0, help="Cards per node (below 1: a share of one).")
@click.option("--gpu-type", help="GPU model, e.g. a100.")
@click.option("--npus", type=int, default=0, help="NPUs per node.")
@click.option("--npu-type", help="NPU model, e.g. 910b.")
@click.option("--cpus", type=int, help="CPUs per node.")
@click.option("--nodes", type=int, default=1, show_default=True)
@click.option("--account", help="Slurm account (tenant) of the job.")
@click.option("--data", help="Data set the job reads (matched against cluster labels).")
@click.pass_context
def pick(
    ctx: click.Context,
    *,
    gpus: float,
    gpu_type: str | None,
    npus: int,
    npu_type: str | None,
    cpus: int | None,
    nodes: int,
    account: str | None,
    data: str | None,
) -> None:
    """The cluster a job asking for this would be submitted to, and why (submits nothing)."""
    try:
        req = request_for(
            gpus=gpus,
            gpu_type=gpu_type,
            npus=npus,
            npu_type=npu_type,
            cpus=cpus,
            nodes=nodes,
            account=account,
            data=data,
        )
        decision = pick_cluster(req, snapshot.take(_client(ctx)), policy_from_env())
    except (NoClusterFits, PolicyError, SlurmError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(decision.cluster)
    for name, why in decision.reasons.items():
        click.echo(f"  {name}: {why}", err=True)
