"""Submitting through the Slurm client: order, dependency ids, roll-back, recorded specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobspec.errors import SpecError, SubmitError
from jobspec.library import History
from jobspec.submit import check_paths, plan, submit_specs
from slurm_plugins.client import SlurmClient
from tests.unit.jobspec.conftest import make
from tests.unit.jobspec.fakes import FakeSlurm


def pipeline() -> list:  # type: ignore[type-arg]
    return [
        make(name="report", dependencies={"afterany": ["train"]}),
        make(name="train", dependencies={"afterok": ["prep"]}, resources={"gpus": 1}),
        make(name="prep"),
    ]


def test_dependencies_are_submitted_first_with_their_job_ids(tmp_path: Path) -> None:
    fake = FakeSlurm()
    history = History(tmp_path)
    done = submit_specs(pipeline(), SlurmClient(fake), history=history, cluster="lab")
    assert [(s.name, s.job_id) for s in done] == [("prep", 101), ("train", 102), ("report", 103)]
    argvs = [argv for argv, _ in fake.submitted]
    assert argvs[0][:2] == ("sbatch", "--parsable")
    assert "--dependency=afterok:101" in argvs[1]
    assert "--dependency=afterany:102" in argvs[2]
    scripts = [script for _, script in fake.submitted]
    assert all(s and s.startswith("#!/bin/bash\nset -euo pipefail\n") for s in scripts)
    assert history.spec("lab", 102) == pipeline()[1]


def test_as_user_goes_through_runuser() -> None:
    fake = FakeSlurm()
    submit_specs([make()], SlurmClient(fake), as_user="alice")
    assert fake.submitted[0][0][:4] == ("runuser", "-u", "alice", "--")


def test_a_rejected_spec_cancels_what_was_submitted_before(tmp_path: Path) -> None:
    fake = FakeSlurm(reject="report")
    with pytest.raises(SubmitError, match="report: Invalid qos specification") as info:
        submit_specs(pipeline(), SlurmClient(fake), history=History(tmp_path))
    assert info.value.submitted == {"prep": 101, "train": 102}
    assert ("scancel", "101", "102") in [argv for argv, _ in fake.calls]


def test_a_share_above_one_card_goes_as_shards_where_slurm_gives_them() -> None:
    fake = FakeSlurm(release="24.11.5")
    submit_specs([make(resources={"gpus": 1.25})], SlurmClient(fake))
    assert "--gres=shard:40" in fake.submitted[0][0]


def test_a_share_above_one_card_is_refused_before_slurm_where_it_cannot() -> None:
    fake = FakeSlurm(release="22.05.8")
    specs = [make(name="prep"), make(name="wide", resources={"gpus": "41/32"})]
    with pytest.raises(SpecError) as info:
        submit_specs(specs, SlurmClient(fake))
    assert info.value.messages == (
        "wide: resources.gpus: 1.28125 cards: Slurm 22.05 gives one job's shards from one card "
        "only; ask for whole cards or a share of one card (shares above one card need Slurm "
        "23.11 or later)",
    )
    assert fake.submitted == []  # not even the spec that could run


def test_plan_shows_placeholders_for_dependencies() -> None:
    rendered = plan(pipeline())
    assert [s.name for s, _ in rendered] == ["prep", "train", "report"]
    assert "--dependency=afterok:<prep>" in rendered[1][1].argv


def test_dry_run_client_submits_nothing() -> None:
    fake = FakeSlurm()
    done = submit_specs([make()], SlurmClient(fake, dry_run=True))
    assert done[0].job_id == 0
    assert fake.calls == []


def test_check_paths(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    spec = make(
        workdir=str(tmp_path),
        outputs=f"{tmp_path}/missing",
        mounts=[{"name": "d", "path": f"{tmp_path}/data"}, {"name": "e", "path": "nope"}],
    )
    assert check_paths(spec) == [
        f"outputs: directory {tmp_path}/missing does not exist",
        "mounts[1].path: /data/nope does not exist",
    ]
    assert check_paths(make()) == []
