"""The first level reads a job as every way into a job writes it: the JobRequest a spec
renders to gives the request the spec's resources described (whole cards, shares of a card,
NPUs, CPUs only; nodes, account), with CPUs per node counted over the node's tasks."""

from __future__ import annotations

from typing import Any

import pytest

from jobspec.render import render
from slurm_plugins.client.job import Component, Gres, JobRequest
from slurm_plugins.federation import request_for, request_of
from slurm_plugins.federation.model import Kind
from tests.unit.jobspec.conftest import make

CASES: list[dict[str, Any]] = [
    {"gpus": 2, "gpu_type": "a100", "cpus": 8},
    {"gpus": 0.25, "cpus": 2},
    {"gpus": 1.25},
    {"npus": 4, "npu_type": "910b", "cpus": 16},
    {"cpus": 3},
]


@pytest.mark.parametrize("resources", CASES, ids=str)
def test_a_rendered_spec_asks_the_first_level_what_its_resources_say(
    resources: dict[str, Any],
) -> None:
    spec = make(project="nlp", resources=resources)
    res = spec.resources
    by_spec = request_for(
        gpus=float(res.gpus),
        gpu_type=res.gpu_type,
        npus=res.npus,
        npu_type=res.npu_type,
        cpus=res.cpus,
        nodes=res.nodes,
        account=spec.project,
        data="pets",
    )
    assert request_of(render(spec).request, data="pets") == by_spec


def test_cpus_per_node_count_every_task_on_the_node() -> None:
    job = JobRequest(
        components=(
            Component(
                account="vision",
                nodes=2,
                tasks_per_node=4,
                cpus_per_task=6,
                gres=(Gres("shard", 8),),
            ),
        )
    )
    req = request_of(job)
    assert (req.kind, req.count, req.cpus, req.nodes, req.account) == (
        Kind.SHARD,
        8,
        24,
        2,
        "vision",
    )
