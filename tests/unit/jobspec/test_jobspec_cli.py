"""The click commands, on a fake Slurm: submit (dry run too), jobs, job, cancel, templates."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from jobspec.cli import COMMANDS, Settings
from slurm_plugins.client import SlurmClient
from tests.unit.jobspec.conftest import DATA
from tests.unit.jobspec.fakes import FakeSlurm, squeue_job


@click.group()
def cli() -> None:
    """What ``aipool`` mounts."""


for command in COMMANDS:
    cli.add_command(command)


@pytest.fixture
def fake() -> FakeSlurm:
    return FakeSlurm()


@pytest.fixture
def invoke(fake: FakeSlurm, tmp_path: Path):  # type: ignore[no-untyped-def]
    obj = {
        "slurm_client": SlurmClient(fake),
        "jobspec_settings": Settings(state_dir=tmp_path / "state", cluster="lab"),
    }

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), obj=obj, catch_exceptions=False)

    return run


def test_commands_to_mount() -> None:
    assert [c.name for c in COMMANDS] == ["submit", "jobs", "job", "cancel", "template"]


def test_dry_run_prints_argv_and_script_and_submits_nothing(invoke, fake: FakeSlurm) -> None:  # type: ignore[no-untyped-def]
    res = invoke("submit", "--dry-run", str(DATA / "specs" / "pipeline.yaml"))
    assert res.exit_code == 0, res.output
    assert "sbatch --parsable --job-name=prep" in res.output
    assert "'--dependency=afterok:<prep>'" in res.output
    assert res.output.count("#!/bin/bash") == 3
    assert fake.calls == []


def test_submit_prints_ids_and_records_specs(invoke, fake: FakeSlurm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = invoke("submit", str(DATA / "specs" / "hello.yaml"), "--set", "resources.gpus=0.5")
    assert res.exit_code == 0, res.output
    assert res.output == "101\thello\n"
    assert "--gres=shard:16" in fake.submitted[0][0]
    recorded = json.loads((tmp_path / "state/history/lab/101.json").read_text())
    assert recorded["spec"]["resources"] == {"gpus": "1/2"}


def test_submit_reports_spec_errors_with_paths(invoke, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: 'x; rm -rf ~'\ncommand: x\nresources: {gpus: 0.3}\n")
    res = invoke("submit", str(bad))
    assert res.exit_code == 1
    assert "name: 'x; rm -rf ~' is not allowed" in res.output
    assert "resources.gpus: GPU fraction 0.3 is not a multiple of 1/32" in res.output


def test_submit_checks_directories(invoke, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\ncommand: x\nworkdir: {tmp_path}/nope\n")
    res = invoke("submit", str(spec))
    assert f"s: workdir: directory {tmp_path}/nope does not exist" in res.output
    assert invoke("submit", "--no-check-paths", str(spec)).exit_code == 0


def test_submit_shows_slurms_refusal(tmp_path: Path) -> None:
    obj = {
        "slurm_client": SlurmClient(FakeSlurm(reject="hello")),
        "jobspec_settings": Settings(state_dir=tmp_path),
    }
    res = CliRunner().invoke(cli, ["submit", str(DATA / "specs" / "hello.yaml")], obj=obj)
    assert res.exit_code == 1
    assert "hello: Invalid qos specification" in res.output


def test_nothing_to_submit(invoke) -> None:  # type: ignore[no-untyped-def]
    assert "nothing to submit" in invoke("submit").output


def test_templates_and_rerun(invoke, fake: FakeSlurm) -> None:  # type: ignore[no-untyped-def]
    assert invoke("template", "save", "small", str(DATA / "specs" / "hello.yaml")).exit_code == 0
    assert invoke("template", "list").output == "small\n"
    assert "gpus: 1/4" in invoke("template", "show", "small").output
    res = invoke("submit", "--template", "small", "--set", "name=from-template")
    assert res.output == "101\tfrom-template\n"
    res = invoke("submit", "--rerun", "101", "--set", "name=again")
    assert res.output == "102\tagain\n"
    assert "no template named 'nope'" in invoke("template", "show", "nope").output
    assert "no recorded spec for job 9" in invoke("submit", "--rerun", "9").output


def test_jobs_lists_spec_jobs(invoke, fake: FakeSlurm) -> None:  # type: ignore[no-untyped-def]
    fake.jobs = {
        5: squeue_job(5, "train", comment="aipool:name=train"),
        6: squeue_job(6, "other", job_state="PENDING", state_reason="Resources"),
    }
    out = invoke("jobs").output
    assert "train" in out
    assert "other" not in out
    out = invoke("jobs", "--all").output
    assert "Resources" in out


def test_job_shows_spec_state_progress_and_jupyter(invoke, fake: FakeSlurm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    invoke("submit", str(DATA / "specs" / "hello.yaml"))
    out_file = tmp_path / "hello-101.out"
    out_file.write_text("start\nprogress: 61%\n")
    (tmp_path / "jupyter-101.json").write_text(
        json.dumps(
            {
                "job_id": 101,
                "host": "gpu1",
                "port": 9000,
                "token": "t",
                "url": "http://gpu1:9000/?token=t",
            }
        )
    )
    fake.jobs = {
        101: squeue_job(
            101, "hello", comment="aipool:name=hello,jupyter=1", standard_output=str(out_file)
        )
    }
    res = invoke("job", "101")
    assert res.exit_code == 0, res.output
    assert "state:    RUNNING" in res.output
    assert "progress: 61%" in res.output
    assert "jupyter:  http://gpu1:9000/?token=t" in res.output
    assert "gpus: 1/4" in res.output
    report = json.loads(invoke("job", "101", "--json").output)
    assert report["spec"]["name"] == "hello"
    assert report["jupyter"]["port"] == 9000


def test_job_falls_back_to_accounting(invoke, fake: FakeSlurm) -> None:  # type: ignore[no-untyped-def]
    fake.accounted = {
        7: {
            "job_id": 7,
            "name": "old",
            "state": {"current": "COMPLETED"},
            "user": "bob",
            "nodes": "gpu2",
            "comment": {},
        }
    }
    res = invoke("job", "7")
    assert res.exit_code == 0, res.output
    assert "name:     old" in res.output
    fake.accounted = {}
    assert "job 8 not found" in invoke("job", "8").output


def test_cancel(invoke, fake: FakeSlurm) -> None:  # type: ignore[no-untyped-def]
    assert invoke("cancel", "5", "6").output == "cancelled 5 6\n"
    assert ("scancel", "5", "6") in [argv for argv, _ in fake.calls]


def test_settings_from_env(tmp_path: Path) -> None:
    s = Settings.from_env(
        {
            "AIPOOL_STATE_DIR": str(tmp_path),
            "AIPOOL_CLUSTER": "c2",
            "AIPOOL_DATA_ROOT": "/lake",
            "HOME": "/h",
        }
    )
    assert (s.state_dir, s.cluster, s.cluster_config.data_root) == (tmp_path, "c2", "/lake")
    assert s.cluster_config.model_root == "/models"
    assert Settings.from_env({"XDG_STATE_HOME": "/x"}).state_dir == Path("/x/aipool")
