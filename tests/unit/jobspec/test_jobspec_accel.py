"""MLU, DCU and XPU cards in a job spec: validation, GRES, partition, round trip."""

from __future__ import annotations

import pytest

from jobspec.codec import spec_to_data
from jobspec.options import ClusterConfig
from jobspec.render import render
from tests.unit.jobspec.conftest import errors_of, make, spec_data


@pytest.mark.parametrize(
    ("resources", "gres"),
    [
        ({"mlus": 2, "mlu_type": "mlu370"}, "--gres=mlu:mlu370:2"),
        ({"dcus": 1}, "--gres=dcu:1"),
        ({"xpus": 4, "xpu_type": "p800"}, "--gres=xpu:p800:4"),
    ],
)
def test_cards_become_typed_gres_in_the_accel_partition(
    resources: dict[str, object], gres: str
) -> None:
    argv = render(make(resources=resources)).argv
    assert "--partition=accel" in argv
    assert [a for a in argv if a.startswith("--gres")] == [gres]
    cfg = ClusterConfig(accel_partition="mlu")
    assert "--partition=mlu" in render(make(resources=resources), cfg).argv


def test_one_kind_of_card_per_job() -> None:
    assert errors_of(spec_data(resources={"mlus": 1, "dcus": 1})) == [
        "resources.dcus: a job asks for one kind of card: mlus or dcus, not both"
    ]
    assert errors_of(spec_data(resources={"gpus": 1, "xpus": 1})) == [
        "resources.xpus: a job asks for one kind of card: gpus or xpus, not both"
    ]


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"xpu_type": "p800"}, "resources.xpu_type: set xpus as well"),
        ({"mlus": 65}, "resources.mlus: "),
        ({"dcus": "2"}, "resources.dcus: must be a whole number"),
        ({"mlus": 1, "mlu_type": "MLU 370"}, "resources.mlu_type: "),
    ],
)
def test_bad_card_requests_are_refused_clearly(resources: dict[str, object], message: str) -> None:
    (error,) = errors_of(spec_data(resources=resources))
    assert error.startswith(message)


def test_multi_gpu_starts_one_process_per_card() -> None:
    spec = make(resources={"mlus": 4}, topology={"kind": "multi_gpu"})
    assert spec.resources.processes_per_node == 4


def test_round_trip() -> None:
    spec = make(resources={"dcus": 2, "dcu_type": "k100_ai"})
    assert spec_to_data(spec)["resources"] == {"dcus": 2, "dcu_type": "k100_ai"}
    assert make(**spec_to_data(spec)) == spec
