"""MLU, DCU and XPU jobs through the admission hook of a lab with an ``accel`` partition:
routed there, refused elsewhere, and the default lab's policy unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from aipool.lab.config import ACCEL_INVENTORY, DEFAULT_INVENTORY
from aipool.lab.render import lab_policy
from gres.inventory import load_inventory
from slurm_plugins.admission import load_policy
from slurm_plugins.admission.config import LAB_POLICY, Kind
from tests.unit.admission.luarun import install, run, submit


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    policy = lab_policy(load_inventory(ACCEL_INVENTORY))
    return install(tmp_path_factory.mktemp("accel") / "etc", policy)


def test_only_a_lab_with_accel_nodes_has_the_pool() -> None:
    assert lab_policy(load_inventory(DEFAULT_INVENTORY)) == load_policy(LAB_POLICY)
    policy = lab_policy(load_inventory(ACCEL_INVENTORY))
    assert policy.pool("accel").kind is Kind.ACCEL
    assert policy.cluster.gres["xpu"] is Kind.ACCEL


def test_card_jobs_are_routed_to_accel_and_refused_elsewhere(hook: Path) -> None:
    routed, on_gpu, on_accel = run(
        hook,
        [
            submit("routed", "carol", tres_per_node="gres:mlu:mlu370:2"),
            submit("on gpu", "alice", partition="gpu", tres_per_node="gres:dcu:1"),
            submit("on accel", "bob", partition="accel", tres_per_node="gres:xpu:p800:1"),
        ],
    )
    assert routed.accepted
    assert routed.set["partition"] == "accel"
    assert on_accel.accepted
    assert on_gpu.user == [
        "aipool: partition gpu holds GPUs, but this job asks for MLUs, DCUs or XPUs; "
        "submit it with -p accel"
    ]
