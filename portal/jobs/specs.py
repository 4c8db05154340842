"""Jobs from declarative specs (:mod:`jobspec`): validated and rendered by jobspec into a job
request and a script. The request goes to slurmrestd as it is; a heterogeneous spec
(PS/worker, master/worker …) is one request with a component per role.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from flask import current_app

from jobspec import ClusterConfig, SpecError, load_spec, render
from jobspec.submit import asks_precision
from portal.errors import ValidationFailed
from portal.nodes.service import read_nodes
from portal.slurm import SlurmPort
from portal.upstream import port_range
from slurm_plugins.client.job import JobRequest


def cluster_config() -> ClusterConfig:
    """How the portal's specs render on this site: Jupyter from the job runtime, on a port
    of the range the portal proxies to."""
    runtime = current_app.config.get("JOB_RUNTIME")
    ports = port_range(current_app.config["PROXY_PORT_RANGE"])
    return ClusterConfig(
        runtime=str(runtime) if runtime else None, app_ports=(ports.low, ports.high)
    )


def spec_job(
    data: Mapping[str, Any], cfg: ClusterConfig | None = None, port: SlurmPort | None = None
) -> tuple[str, JobRequest]:
    """``(script, request)`` for one spec mapping; field errors as :class:`ValidationFailed`.
    A spec with a precision is rendered against the card models of ``port``'s nodes."""
    try:
        spec = load_spec(data)
        if port is not None and asks_precision(spec):
            features = {f for n in read_nodes(port) for f in n.features}
            cfg = replace(cfg or ClusterConfig(), card_types=tuple(sorted(features)))
        rendered = render(spec, cfg)
    except SpecError as exc:
        raise ValidationFailed({"spec": list(exc.messages)}) from None
    return rendered.script, rendered.request
