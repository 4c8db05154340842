"""The two wire forms of a :class:`~slurm_plugins.client.job.JobRequest`.

``argv``: sbatch options in a fixed order — per component the job name, account, QOS, time,
partition, nodes, tasks, CPUs, memory, GRES, constraint, node lists and switches; then, with
the first component only, the job-wide options.

``REST_FORMS``: one function per slurmrestd data-parser version, each returning the ``job`` or
``jobs`` member of a ``/job/submit`` body. A later version (v0.0.40 of Slurm 24.11 nests
numbers as ``{"set": …, "number": …}`` and lists the environment as ``K=V`` strings) is one
more entry here; callers only name the version their slurmrestd speaks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from slurm_plugins.client.errors import JobRequestError

if TYPE_CHECKING:
    from slurm_plugins.client.job import Component, JobRequest

HET_SEPARATOR = ":"


# ---------------------------------------------------------------------- sbatch
def argv(job: JobRequest) -> tuple[str, ...]:
    out: list[str] = []
    for i, c in enumerate(job.components):
        if i:
            out.append(HET_SEPARATOR)
        out += _component_argv(job.name, c)
        if i == 0:
            out += _job_argv(job)
    return tuple(out)


def _component_argv(name: str | None, c: Component) -> list[str]:
    opts = [f"--job-name={name}"] if name else []
    for option, value in (
        ("account", c.account),
        ("qos", c.qos),
        ("time", c.time_limit),
        ("partition", c.partition),
        ("nodes", c.nodes),
        ("ntasks", c.tasks),
        ("ntasks-per-node", c.tasks_per_node),
        ("cpus-per-task", c.cpus_per_task),
    ):
        if value is not None:
            opts.append(f"--{option}={value}")
    if c.memory_mb is not None:
        opts.append(f"--mem={c.memory_mb}M")
    if c.gres:
        opts.append(f"--gres={','.join(str(g) for g in c.gres)}")
    if c.constraint:
        opts.append(f"--constraint={c.constraint}")
    if c.nodelist:
        opts.append(f"--nodelist={','.join(c.nodelist)}")
    if c.exclude:
        opts.append(f"--exclude={','.join(c.exclude)}")
    if c.switches is not None:
        wait = c.switches.wait_s
        # sbatch reads the wait as a Slurm time; [days-]hours:minutes:seconds is exact.
        at = "" if wait is None else f"@{_clock(wait)}"
        opts.append(f"--switches={c.switches.count}{at}")
    return opts


def _clock(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _job_argv(job: JobRequest) -> list[str]:
    opts: list[str] = []
    if job.workdir:
        opts.append(f"--chdir={job.workdir}")
    if job.output:
        opts.append(f"--output={job.output}")
    if job.open_mode is not None:
        opts.append(f"--open-mode={job.open_mode.value}")
    if job.environment is not None:
        opts.append(f"--export={_export(job.environment)}")
    if job.requeue is not None:
        opts.append("--requeue" if job.requeue else "--no-requeue")
    if job.begin:
        opts.append(f"--begin={job.begin}")
    if job.hold:
        opts.append("--hold")
    if dependency := job.dependency:
        opts.append(f"--dependency={dependency}")
    if job.kill_on_invalid_dep is not None:
        opts.append(f"--kill-on-invalid-dep={'yes' if job.kill_on_invalid_dep else 'no'}")
    if job.mail_user:
        opts.append(f"--mail-user={job.mail_user}")
    if job.mail_type:
        opts.append(f"--mail-type={','.join(job.mail_type)}")
    if comment := job.comment:
        opts.append(f"--comment={comment}")
    return opts


def _export(env: Mapping[str, str]) -> str:
    """``NONE`` (Slurm's variables only) or ``K=V,…`` (those and Slurm's, nothing else)."""
    if not env:
        return "NONE"
    for key, value in env.items():
        if "," in value:
            raise JobRequestError(
                "environment", f"sbatch --export cannot carry the ',' in the value of {key}"
            )
    return ",".join(f"{k}={v}" for k, v in env.items())


# ---------------------------------------------------------------------- slurmrestd
def _rest_v0038(job: JobRequest) -> dict[str, Any]:
    """slurmrestd 22.05 (``openapi/v0.0.38``). It parses every component on its own: each
    needs the environment, and gets the working directory so that none starts in
    slurmrestd's own. Its ``requeue: false`` changes nothing, so ``no_requeue`` says it."""
    env = _rest_environment(job.environment)
    parts = []
    for i, c in enumerate(job.components):
        props: dict[str, Any] = {"name": job.name} if job.name else {}
        props.update(_component_rest(c))
        if job.workdir:
            props["current_working_directory"] = job.workdir
        props["environment"] = dict(env)
        if i == 0:
            props.update(_job_rest(job))
        parts.append(props)
    return {"job": parts[0]} if len(parts) == 1 else {"jobs": parts}


def _component_rest(c: Component) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for prop, value in (
        ("account", c.account),
        ("qos", c.qos),
        ("time_limit", c.time_limit),
        ("partition", c.partition),
        ("nodes", c.nodes),
        ("tasks", c.tasks),
        ("tasks_per_node", c.tasks_per_node),
        ("cpus_per_task", c.cpus_per_task),
        ("memory_per_node", c.memory_mb),
    ):
        if value is not None:
            props[prop] = value
    if c.gres:
        props["gres"] = ",".join(str(g) for g in c.gres)
    if c.constraint:
        props["constraints"] = c.constraint
    if c.nodelist:
        props["nodelist"] = ",".join(c.nodelist)
    if c.exclude:
        props["exclude_nodes"] = ",".join(c.exclude)
    if c.switches is not None:
        props["required_switches"] = c.switches.count
        if c.switches.wait_s is not None:
            props["wait_for_switch"] = c.switches.wait_s
    return props


def _job_rest(job: JobRequest) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if job.output:
        props["standard_output"] = job.output
    if job.open_mode is not None:
        props["open_mode"] = job.open_mode.value
    if job.requeue is not None:
        props["requeue" if job.requeue else "no_requeue"] = True
    if job.begin:
        props["begin_time"] = job.begin
    if job.hold:
        props["hold"] = True
    if dependency := job.dependency:
        props["dependency"] = dependency
    if job.kill_on_invalid_dep is not None:
        props["kill_on_invalid_dependency"] = job.kill_on_invalid_dep
    if job.mail_user:
        props["mail_user"] = job.mail_user
    if job.mail_type:
        props["mail_type"] = ",".join(job.mail_type)
    if comment := job.comment:
        props["comment"] = comment
    return props


def _rest_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        raise JobRequestError(
            "environment",
            "slurmrestd has no submitter's environment to pass on; give the job's variables",
        )
    if not env:
        raise JobRequestError(
            "environment", "slurmrestd needs at least one variable for the job (e.g. PATH)"
        )
    return dict(env)


def _rest_v0040(job: JobRequest) -> dict[str, Any]:
    """slurmrestd 23.11+ (data parsers ``v0.0.40`` to ``v0.0.42``, one form for all three):
    the script goes inside the first component, the environment is a list of ``K=V``,
    numbers that may be unset are ``{"set": true, "number": n}``, node lists are lists, GRES
    are TRES (``gres/gpu:2``), and ``requeue: false`` is honoured."""
    env = [f"{k}={v}" for k, v in _rest_environment(job.environment).items()]
    parts = []
    for i, c in enumerate(job.components):
        props: dict[str, Any] = {"name": job.name} if job.name else {}
        props.update(_component_rest_v0040(c))
        if job.workdir:
            props["current_working_directory"] = job.workdir
        props["environment"] = list(env)
        if i == 0:
            props.update(_job_rest_v0040(job))
        parts.append(props)
    return {"job": parts[0]} if len(parts) == 1 else {"jobs": parts}


def _epoch(begin: str) -> int:
    """slurmrestd 23.11+ takes a begin time as a UNIX time: from one, or from an ISO date
    and time (the host's zone when it names none); sbatch's other forms (``now+1hour``)
    are sbatch's own."""
    if begin.isdigit():
        return int(begin)
    try:
        return int(datetime.fromisoformat(begin).timestamp())
    except ValueError:
        raise JobRequestError(
            "begin", f"{begin!r}: slurmrestd takes a UNIX time or an ISO date and time"
        ) from None


def _set(number: int) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": number}


def _component_rest_v0040(c: Component) -> dict[str, Any]:
    props = _component_rest(c)
    for key in ("time_limit", "memory_per_node"):
        if key in props:
            props[key] = _set(props[key])
    if "nodes" in props:
        props["nodes"] = str(props["nodes"])
    if c.gres:
        del props["gres"]
        props["tres_per_node"] = ",".join(f"gres/{g}" for g in c.gres)
    if c.nodelist:
        del props["nodelist"]
        props["required_nodes"] = list(c.nodelist)
    if c.exclude:
        del props["exclude_nodes"]
        props["excluded_nodes"] = list(c.exclude)
    if c.switches is not None:
        props["required_switches"] = _set(c.switches.count)
    return props


def _job_rest_v0040(job: JobRequest) -> dict[str, Any]:
    props = _job_rest(job)
    props.pop("no_requeue", None)
    if job.requeue is not None:
        props["requeue"] = job.requeue
    if job.open_mode is not None:
        props["open_mode"] = [job.open_mode.value.upper()]
    if job.begin:
        props["begin_time"] = _set(_epoch(job.begin))
    if job.kill_on_invalid_dep is not None:
        del props["kill_on_invalid_dependency"]
        kill = job.kill_on_invalid_dep
        props["flags"] = ["KILL_INVALID_DEPENDENCY" if kill else "NO_KILL_INVALID_DEPENDENCY"]
    if job.mail_type:
        props["mail_type"] = list(job.mail_type)
    return props


REST_FORMS: Mapping[str, Callable[[JobRequest], dict[str, Any]]] = {
    "v0.0.38": _rest_v0038,
    "v0.0.40": _rest_v0040,
    "v0.0.41": _rest_v0040,
    "v0.0.42": _rest_v0040,
}
