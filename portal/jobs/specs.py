"""Jobs from declarative specs (:mod:`jobspec`): rendered with the jobspec renderer, then its
sbatch options mapped onto slurmrestd's job properties.

Only options with a slurmrestd v0.0.38 property are accepted; a spec that needs any other
(a heterogeneous job, a node list) is refused with the option named, never half-applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import current_app

from jobspec import ClusterConfig, SpecError, load_spec, render
from jobspec.render import HET_SEPARATOR
from portal.errors import ValidationFailed


def _minutes(value: str) -> int:
    return int(value)


def _megabytes(value: str) -> int:
    if not value.endswith("M") or not value[:-1].isdigit():
        raise ValueError(value)
    return int(value[:-1])


def _yes(value: str) -> bool:
    return value == "yes"


# sbatch option -> (property, conversion); flags without a value carry None
OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--job-name": ("name", str),
    "--account": ("account", str),
    "--qos": ("qos", str),
    "--time": ("time_limit", _minutes),
    "--partition": ("partition", str),
    "--nodes": ("nodes", int),
    "--ntasks": ("tasks", int),
    "--ntasks-per-node": ("tasks_per_node", int),
    "--cpus-per-task": ("cpus_per_task", int),
    "--mem": ("memory_per_node", _megabytes),
    "--gres": ("gres", str),
    "--constraint": ("constraints", str),
    "--chdir": ("current_working_directory", str),
    "--output": ("standard_output", str),
    "--open-mode": ("open_mode", str),
    "--dependency": ("dependency", str),
    "--kill-on-invalid-dep": ("kill_on_invalid_dependency", _yes),
    "--mail-user": ("mail_user", str),
    "--mail-type": ("mail_type", str),
    "--comment": ("comment", str),
}
FLAGS: dict[str, tuple[str, Any]] = {
    "--requeue": ("requeue", True),
    "--no-requeue": ("requeue", False),
    "--export=NONE": ("environment", None),  # the portal always sends a minimal environment
}


def cluster_config() -> ClusterConfig:
    """How the portal's specs render on this site: Jupyter from the job runtime."""
    runtime = current_app.config.get("JOB_RUNTIME")
    return ClusterConfig(runtime=str(runtime) if runtime else None)


def spec_job(
    data: Mapping[str, Any], cfg: ClusterConfig | None = None
) -> tuple[str, dict[str, Any]]:
    """``(script, properties)`` for one spec mapping; field errors as :class:`ValidationFailed`."""
    try:
        rendered = render(load_spec(data), cfg)
    except SpecError as exc:
        raise ValidationFailed({"spec": list(exc.messages)}) from None
    if HET_SEPARATOR in rendered.argv:
        raise ValidationFailed(
            {
                "spec": [
                    "heterogeneous jobs cannot be submitted through the "
                    "portal yet; use `aipool submit`"
                ]
            }
        )
    props: dict[str, Any] = {}
    unsupported = []
    for item in rendered.argv:
        if item in FLAGS:
            prop, value = FLAGS[item]
            if value is not None:
                props[prop] = value
            continue
        option, sep, raw = item.partition("=")
        if not sep or option not in OPTIONS:
            unsupported.append(option)
            continue
        prop, convert = OPTIONS[option]
        try:
            props[prop] = convert(raw)
        except ValueError:
            unsupported.append(item)
    if unsupported:
        raise ValidationFailed(
            {"spec": [f"not supported through the portal: {', '.join(unsupported)}"]}
        )
    return rendered.script, props
