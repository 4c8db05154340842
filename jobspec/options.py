"""What a spec asks of Slurm, as the Slurm client's neutral job: components and a request.

jobspec knows no sbatch or slurmrestd syntax: it builds a
:class:`~slurm_plugins.client.job.JobRequest` and the client writes it in either wire form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from gres.naming import DEFAULT_SHARDS_PER_GPU
from jobspec.compute import constraint
from jobspec.model import Dependency, Resources, Spec, TopologyKind
from slurm_plugins.client.job import Component, Gres, JobRequest, OpenMode, Switches
from slurm_plugins.client.job import Dependency as After
from slurm_plugins.client.labels import VALUE as LABEL_VALUE


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """What rendering needs to know about the cluster; parsed once at the edge."""

    gpu_partition: str = "gpu"
    npu_partition: str = "npu"
    #: the partition of MLU, DCU and XPU nodes (the lab's ``accel``)
    accel_partition: str = "accel"
    cpu_partition: str = "cpu"
    data_root: str = "/data"
    model_root: str = "/models"
    #: ``conda.sh`` to source before ``conda activate``; None uses ``conda shell.bash hook``.
    conda_sh: str | None = None
    #: The job runtime every user can run (``/opt/aipool/runtime`` in the lab): a Jupyter job
    #: without conda or modules starts its JupyterLab. None: ``jupyter`` from the PATH.
    runtime: str | None = None
    #: Ports for rendezvous and roles: a block of ``port_span`` per job, chosen by job id.
    port_low: int = 20000
    port_slots: int = 150
    port_span: int = 64
    #: Ports a job's server (Jupyter) listens on, both included: the range the portal proxies
    #: to (its ``PROXY_PORT_RANGE``), clear of the site's services.
    app_ports: tuple[int, int] = (50000, 59999)
    #: The GRES types (card models) the pool's nodes have, for ``precision`` and
    #: ``min_score``; None: not known (a dry run), every model of the catalogue.
    card_types: tuple[str, ...] | None = None


def partition_for(res: Resources, chosen: str | None, cfg: ClusterConfig) -> str:
    if chosen:
        return chosen
    if res.npus:
        return cfg.npu_partition
    if res.accels:
        return cfg.accel_partition
    return cfg.gpu_partition if res.gpus else cfg.cpu_partition


def gres(res: Resources) -> tuple[Gres, ...]:
    """``gpu:a100:2``, ``shard:8`` (a share that is not whole cards: ``shard:40`` is 1.25
    cards), ``npu:910b:1`` or ``mlu:mlu370:2`` (likewise ``dcu``, ``xpu``), per node."""
    if frac := res.gpu_fraction:
        return (Gres("shard", shards_of(frac)),)
    if res.whole_gpus:
        return (Gres("gpu", res.whole_gpus, res.gpu_type),)
    if res.npus:
        return (Gres("npu", res.npus, res.npu_type),)
    if res.accel_kind and res.accels:
        return (Gres(res.accel_kind, res.accels, res.accel_type),)
    return ()


def shards_of(share: Fraction) -> int:
    """Shards for a share of cards on the 1/32 grid (the spec's field checked the grid)."""
    return int(share * DEFAULT_SHARDS_PER_GPU)


def component(
    spec: Spec,
    res: Resources,
    *,
    partition: str,
    nodes: int,
    tasks_per_node: int,
    single_task: bool,
    with_nodes: bool = True,
    cards: tuple[str, ...] = (),
) -> Component:
    """One component: the spec's account, QOS and time limit; where it runs and what each
    node of it gets; the spec's affinity (``with_nodes=False`` leaves the node list out) and
    the card models its precision allows (``cards``, from :func:`jobspec.compute.card_types`)."""
    a = spec.affinity
    return Component(
        account=spec.project,
        qos=spec.priority.qos,
        time_limit=spec.resources.time_min,
        partition=partition,
        nodes=nodes,
        tasks=1 if single_task else None,
        tasks_per_node=None if single_task else tasks_per_node,
        cpus_per_task=res.cpus,
        memory_mb=res.memory_mb,
        gres=gres(res),
        constraint=constraint(a.features, cards),
        nodelist=a.nodes if with_nodes else (),
        exclude=a.exclude,
        switches=switches(spec, nodes),
    )


def switches(spec: Spec, nodes: int) -> Switches | None:
    """``same_switch`` as Slurm's ``--switches=1[@wait]``; one node is always under one switch."""
    a = spec.affinity
    if not a.same_switch or nodes < 2:
        return None
    return Switches(1, None if a.max_wait_min is None else a.max_wait_min * 60)


def job_request(
    spec: Spec, components: tuple[Component, ...], deps: Mapping[str, int | str]
) -> JobRequest:
    """The job as a whole: the spec's directories, restart, dependencies, mail and labels.

    The job starts with Slurm's variables only: the script sets up everything else."""
    notify = spec.notify
    return JobRequest(
        components=components,
        name=spec.name,
        workdir=spec.workdir,
        output=output_path(spec.outputs or spec.workdir, spec.name),
        open_mode=OpenMode.APPEND,
        environment={},
        requeue=spec.restart.requeue,
        dependencies=dependencies(spec.dependencies, deps),
        kill_on_invalid_dep=True if spec.dependencies else None,
        mail_user=notify.email if notify else None,
        mail_type=tuple(e.value.upper() for e in notify.events) if notify else (),
        labels=labels(spec),
    )


def output_path(directory: str | None, name: str) -> str:
    """Where a spec's job writes its output: ``<name>-%j.out`` in ``outputs:`` or
    ``workdir:``, else in the job's working directory (Slurm takes a relative path from it).
    The portal finds a finished job's output by the same rule from the spec it recorded."""
    return f"{directory + '/' if directory else ''}{name}-%j.out"


def dependencies(
    dependencies: tuple[Dependency, ...], deps: Mapping[str, int | str]
) -> tuple[After, ...]:
    """Each dependency on a job id; names are looked up in ``deps`` (name → job id)."""
    out = []
    for d in dependencies:
        if isinstance(d.on, str):
            if d.on not in deps:
                raise KeyError(d.on)
            out.append(After(d.type.value, deps[d.on]))
        else:
            out.append(After(d.type.value, d.on))
    return tuple(out)


def labels(spec: Spec) -> dict[str, str]:
    """The spec name and the labels the policy daemon and the portal read from the job."""
    # a name in another script than Latin stays in the job's name only: the labels' grammar
    # keeps its separators out of values with ASCII alone, and nothing reads this label back
    out = {"name": spec.name} if LABEL_VALUE.fullmatch(spec.name) else {}
    if spec.affinity.anti_affinity_group:
        out["anti_affinity"] = spec.affinity.anti_affinity_group
    if spec.topology.kind is not TopologyKind.SINGLE:
        out["topology"] = spec.topology.kind.value
    if spec.jupyter is not None:
        out["jupyter"] = "1"
    return out
