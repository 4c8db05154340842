"""precision and min_score: validated, and turned into a constraint over the pool's card models."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gres.catalogue import Precision
from jobspec.codec import resources_to_data
from jobspec.errors import SpecError
from jobspec.options import ClusterConfig
from jobspec.render import render
from jobspec.submit import submit_specs
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed
from tests.unit.jobspec.conftest import errors_of, make, spec_data
from tests.unit.jobspec.fakes import FakeSlurm

LAB = ClusterConfig(card_types=("910b", "a100", "cpu", "gpu", "npu"))
SINFO = Path(__file__).parents[2] / "data" / "slurm" / "22.05" / "sinfo.json"


def constraint_of(cfg: ClusterConfig = LAB, **fields: object) -> str | None:
    return render(make(**fields), cfg).request.components[0].constraint


def test_precision_and_min_score_are_read_and_written_back() -> None:
    spec = make(resources={"gpus": 1, "precision": "bf16", "min_score": 300})
    assert spec.resources.precision is Precision.BF16
    assert spec.resources.min_score == 300
    assert resources_to_data(spec.resources) == {"gpus": 1, "precision": "bf16", "min_score": 300}


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"precision": "bf16"}, "resources.precision: a precision is for cards: set gpus or npus"),
        ({"gpus": 1, "min_score": 10}, "resources.min_score: a score is in TFLOPS at one"),
        ({"gpus": 1, "precision": "fp64"}, "resources.precision: Must be one of: fp32, fp16"),
        ({"gpus": 1, "precision": "bf16", "min_score": 0}, "resources.min_score: Must be greater"),
        ({"gpus": 1, "precision": "bf16", "min_score": "lots"}, "resources.min_score: Not a valid"),
    ],
)
def test_bad_values_are_named(resources: dict[str, object], message: str) -> None:
    errors = errors_of(spec_data(resources=resources))
    assert any(e.startswith(message) for e in errors), errors


def test_precision_becomes_an_or_of_the_pools_models_that_run_it() -> None:
    assert constraint_of(resources={"gpus": 1, "precision": "bf16"}) == "a100"
    assert constraint_of(resources={"npus": 2, "precision": "bf16"}) == "910b"
    assert constraint_of(resources={"gpus": 0.25, "precision": "fp16"}) == "a100"
    pool = ClusterConfig(card_types=("a100", "h100", "t4", "v100"))
    assert constraint_of(pool, resources={"gpus": 1, "precision": "fp16"}) == "a100|h100|t4|v100"
    assert constraint_of(pool, resources={"gpus": 1, "precision": "bf16"}) == "a100|h100"
    assert constraint_of(pool, resources={"gpus": 1, "precision": "int8", "min_score": 1000}) == (
        "h100"
    )
    assert constraint_of(resources={"gpus": 1}) is None


def test_own_features_are_kept_beside_the_models() -> None:
    pool = ClusterConfig(card_types=("a100", "h100"))
    got = constraint_of(
        pool, resources={"gpus": 1, "precision": "bf16"}, affinity={"features": ["nvlink"]}
    )
    assert got == "nvlink&(a100|h100)"
    assert constraint_of(affinity={"features": ["nvlink", "ib"]}) == "nvlink&ib"
    spec = make(resources={"gpus": 1, "precision": "bf16"}, affinity={"features": ["nvlink"]})
    assert "--constraint=nvlink&a100" in render(spec, LAB).argv


def test_no_card_in_the_pool_is_a_clear_error() -> None:
    with pytest.raises(SpecError) as err:
        render(make(resources={"gpus": 1, "precision": "fp8"}), LAB)
    assert err.value.messages == ("resources.precision: no GPU model here runs fp8 (models: a100)",)
    with pytest.raises(SpecError) as err:
        render(make(resources={"gpus": 1, "precision": "bf16", "min_score": 500}), LAB)
    assert err.value.messages[0].startswith(
        "resources.min_score: no GPU model here runs bf16 at 500 TFLOPS (models: a100)"
    )
    with pytest.raises(SpecError, match="models: v100"):
        render(make(resources={"gpus": 1, "gpu_type": "v100", "precision": "bf16"}), LAB)


def test_roles_are_checked_each_at_their_own_path() -> None:
    spec = make(
        topology={
            "kind": "ps_worker",
            "roles": {
                "ps": {"replicas": 1, "command": ["ps"]},
                "worker": {
                    "replicas": 2,
                    "command": ["w"],
                    "resources": {"gpus": 1, "precision": "fp8"},
                },
            },
        },
        command=None,
    )
    with pytest.raises(SpecError) as err:
        render(spec, LAB)
    assert err.value.messages[0].startswith("topology.roles.worker.resources.precision: no GPU")


def test_a_dry_run_without_the_pool_names_every_catalogue_model() -> None:
    got = constraint_of(ClusterConfig(), resources={"gpus": 1, "precision": "fp8"})
    assert got is not None
    assert set(got.split("|")) == {"h100", "h20", "h200", "h800", "l40s", "rtx4090"}


class PoolSlurm(FakeSlurm):
    """sbatch from the fake, and the recorded 22.05 ``sinfo --json`` of the lab."""

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float
    ) -> Completed:
        key = tuple(argv)
        if key == ("sinfo", "--version"):
            return Completed(key, 0, "slurm 22.05.8\n", "")
        if key[:2] == ("sinfo", "--json"):
            return Completed(key, 0, SINFO.read_text(encoding="utf-8"), "")
        return super().__call__(argv, input=input, timeout=timeout)


def test_submitting_asks_the_pool_for_its_models() -> None:
    fake = PoolSlurm()
    submit_specs([make(resources={"gpus": 1, "precision": "bf16"})], SlurmClient(fake))
    assert "--constraint=a100" in fake.submitted[0][0]
    with pytest.raises(SpecError, match="models: a100"):
        submit_specs([make(resources={"gpus": 1, "precision": "fp8"})], SlurmClient(fake))
    plain = PoolSlurm()
    submit_specs([make(resources={"gpus": 1})], SlurmClient(plain))
    assert [c[0][0] for c in plain.calls] == ["sbatch"]
