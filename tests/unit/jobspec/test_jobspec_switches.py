"""``affinity.same_switch``: a multi-node job asks Slurm for one leaf switch (``--switches``),
optionally with a bound on the wait; a job that cannot span nodes is told it means nothing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jobspec.codec import spec_to_data
from jobspec.render import render
from jobspec.schema import load_spec
from slurm_plugins.client.job import HET_SEPARATOR, Switches
from tests.unit.jobspec.conftest import errors_of, make, spec_data

DDP: dict[str, Any] = {"topology": "ddp", "resources": {"nodes": 2, "gpus": 1}}


def switch_options(**fields: Any) -> list[str]:
    return [a for a in render(make(**fields)).argv if a.startswith("--switches")]


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        ({"same_switch": True}, ["--switches=1"]),
        ({"same_switch": True, "max_wait": "10m"}, ["--switches=1@0:10:00"]),
        ({"same_switch": True, "max_wait": "1:30:00"}, ["--switches=1@1:30:00"]),
        ({"same_switch": False}, []),
        ({}, []),
    ],
)
def test_same_switch_becomes_sbatch_switches(affinity: dict[str, Any], expected: list[str]) -> None:
    assert switch_options(**DDP, affinity=affinity) == expected


def test_the_request_carries_the_wait_in_seconds_for_slurmrestd() -> None:
    request = render(make(**DDP, affinity={"same_switch": True, "max_wait": "10m"})).request
    assert request.components[0].switches == Switches(1, 600)
    rest = replace(request, environment={"PATH": "/bin"}).to_rest()["job"]
    assert (rest["required_switches"], rest["wait_for_switch"]) == (1, 600)


def test_a_heterogeneous_job_asks_it_only_for_roles_on_several_nodes() -> None:
    spec = make(
        topology={
            "kind": "ps_worker",
            "roles": {
                "ps": {"resources": {"cpus": 2}},
                "worker": {"replicas": 3, "resources": {"gpus": 1}},
            },
        },
        affinity={"same_switch": True},
    )
    first, second = " ".join(render(spec).argv).split(f" {HET_SEPARATOR} ")
    assert "--switches" not in first
    assert "--switches=1" in second


@pytest.mark.parametrize(
    "fields",
    [
        {"resources": {"gpus": 1}},
        {"topology": "multi_gpu", "resources": {"gpus": 4}},
        {"topology": "ddp", "resources": {"nodes": 1, "gpus": 1}},
        {
            "topology": {
                "kind": "master_worker",
                "roles": {"master": {}, "worker": {"replicas": 1}},
            }
        },
    ],
)
def test_same_switch_on_a_one_node_job_is_refused_with_the_reason(fields: dict[str, Any]) -> None:
    errors = errors_of(spec_data(**fields, affinity={"same_switch": True}))
    assert len(errors) == 1
    assert errors[0].startswith("affinity.same_switch: same_switch keeps a job's nodes under one")
    assert "one node" in errors[0]


@pytest.mark.parametrize(
    ("affinity", "message"),
    [
        ({"max_wait": "10m"}, "affinity.max_wait: max_wait is how long same_switch may wait"),
        ({"same_switch": "yes"}, "affinity.same_switch: must be true or false"),
        ({"same_switch": 1}, "affinity.same_switch: must be true or false"),
        ({"same_switch": True, "max_wait": "soon"}, "affinity.max_wait: 'soon' is not a time"),
        ({"same_switch": True, "max_wait": 0}, "affinity.max_wait: must be between 1 minute"),
    ],
)
def test_bad_affinity_values_are_refused(affinity: dict[str, Any], message: str) -> None:
    errors = errors_of(spec_data(**DDP, affinity=affinity))
    assert any(e.startswith(message) for e in errors), errors


def test_same_switch_round_trips() -> None:
    spec = make(**DDP, affinity={"same_switch": True, "max_wait": "2h"})
    assert spec.affinity.same_switch
    assert spec.affinity.max_wait_min == 120
    data = spec_to_data(spec)
    assert data["affinity"] == {"same_switch": True, "max_wait": 120}
    assert load_spec(data) == spec
