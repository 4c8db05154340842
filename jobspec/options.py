"""sbatch options (argv, never a script header) for a spec and for each job component."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gres.shards import fraction_to_shards
from jobspec.model import Dependency, Resources, Spec, TopologyKind

COMMENT_PREFIX = "aipool:"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """What rendering needs to know about the cluster; parsed once at the edge."""

    gpu_partition: str = "gpu"
    npu_partition: str = "npu"
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


def partition_for(res: Resources, chosen: str | None, cfg: ClusterConfig) -> str:
    if chosen:
        return chosen
    if res.npus:
        return cfg.npu_partition
    return cfg.gpu_partition if res.gpus else cfg.cpu_partition


def gres(res: Resources) -> str | None:
    """``gpu:a100:2``, ``shard:8`` (a fraction of one card) or ``npu:910b:1``, per node."""
    if frac := res.gpu_fraction:
        return f"shard:{fraction_to_shards(frac)}"
    if res.whole_gpus:
        return ":".join(["gpu", *([res.gpu_type] if res.gpu_type else []), str(res.whole_gpus)])
    if res.npus:
        return ":".join(["npu", *([res.npu_type] if res.npu_type else []), str(res.npus)])
    return None


def resource_options(
    res: Resources, *, partition: str, nodes: int, tasks_per_node: int, single_task: bool
) -> list[str]:
    """Options of one component: where it runs and what each node of it gets."""
    opts = [f"--partition={partition}", f"--nodes={nodes}"]
    opts.append("--ntasks=1" if single_task else f"--ntasks-per-node={tasks_per_node}")
    if res.cpus is not None:
        opts.append(f"--cpus-per-task={res.cpus}")
    if res.memory_mb is not None:
        opts.append(f"--mem={res.memory_mb}M")
    if g := gres(res):
        opts.append(f"--gres={g}")
    return opts


def affinity_options(spec: Spec, *, with_nodes: bool = True) -> list[str]:
    a, opts = spec.affinity, []
    if a.features:
        opts.append(f"--constraint={'&'.join(a.features)}")
    if a.nodes and with_nodes:
        opts.append(f"--nodelist={','.join(a.nodes)}")
    if a.exclude:
        opts.append(f"--exclude={','.join(a.exclude)}")
    return opts


def shared_options(spec: Spec) -> list[str]:
    """Options every component of the job carries: name, account, QOS, time limit."""
    opts = [f"--job-name={spec.name}"]
    if spec.project:
        opts.append(f"--account={spec.project}")
    opts.append(f"--qos={spec.priority.qos}")
    if spec.resources.time_min is not None:
        opts.append(f"--time={spec.resources.time_min}")
    return opts


def job_options(spec: Spec, deps: Mapping[str, int | str]) -> list[str]:
    """Options of the job as a whole (given once, with the first component)."""
    opts: list[str] = []
    if spec.workdir:
        opts.append(f"--chdir={spec.workdir}")
    out_dir = spec.outputs or spec.workdir
    opts.append(f"--output={out_dir + '/' if out_dir else ''}{spec.name}-%j.out")
    opts += ["--open-mode=append", "--export=NONE"]
    if spec.restart.requeue is True:
        opts.append("--requeue")
    elif spec.restart.requeue is False:
        opts.append("--no-requeue")
    if spec.dependencies:
        opts += [
            f"--dependency={dependency_expr(spec.dependencies, deps)}",
            "--kill-on-invalid-dep=yes",
        ]
    if spec.notify is not None:
        events = ",".join(e.value.upper() for e in spec.notify.events)
        opts += [f"--mail-user={spec.notify.email}", f"--mail-type={events}"]
    opts.append(f"--comment={job_comment(spec)}")
    return opts


def dependency_expr(dependencies: tuple[Dependency, ...], deps: Mapping[str, int | str]) -> str:
    """``afterok:12:13,afterany:14``; names are looked up in ``deps`` (name → job id)."""
    by_type: dict[str, list[str]] = {}
    for d in dependencies:
        if isinstance(d.on, str):
            if d.on not in deps:
                raise KeyError(d.on)
            target = str(deps[d.on])
        else:
            target = str(d.on)
        by_type.setdefault(d.type.value, []).append(target)
    return ",".join(":".join([t, *ids]) for t, ids in by_type.items())


def job_comment(spec: Spec) -> str:
    """``aipool:name=train,anti_affinity=g1``: the spec name and labels the policy daemon reads."""
    items = [f"name={spec.name}"]
    if spec.affinity.anti_affinity_group:
        items.append(f"anti_affinity={spec.affinity.anti_affinity_group}")
    if spec.topology.kind is not TopologyKind.SINGLE:
        items.append(f"topology={spec.topology.kind.value}")
    if spec.jupyter is not None:
        items.append("jupyter=1")
    return COMMENT_PREFIX + ",".join(items)


def parse_comment(comment: str) -> dict[str, str]:
    """The labels of :func:`job_comment` (``{}`` for jobs AIPool did not render)."""
    if not comment.startswith(COMMENT_PREFIX):
        return {}
    out = {}
    for item in comment[len(COMMENT_PREFIX) :].split(","):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out
