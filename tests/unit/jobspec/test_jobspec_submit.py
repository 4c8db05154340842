"""Submitting through the Slurm client: order, dependency ids, roll-back, recorded specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobspec.errors import SubmitError
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
