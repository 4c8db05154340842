"""``aipool clusters`` and the jobspec CLI's --cluster, on output recorded from a two-cluster
lab (22.05.8): aipool has gpu1 full (4/4 A100) and gpu2 with 1 of 4 free; aipool2 is idle."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

from jobspec.cli import COMMANDS, Settings
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner
from slurm_plugins.federation.cli import clusters

DATA = Path(__file__).parent / "data"
ASSOCS = "".join(
    f"{c}|nlp|alice|||normal|normal|||1|\n{c}|nlp||research||||||1|\n"
    for c in ("aipool", "aipool2")
)


def ok(stdout: str) -> Completed:
    return Completed((), 0, stdout, "")


def recorded() -> ReplayRunner:
    answers = {
        ("sinfo", "--version"): ok("slurm 22.05.8\n"),
        ("sacctmgr", "--noheader", "--parsable2", "show", "cluster"): ok("aipool\naipool2\n"),
        ("sacctmgr", "--noheader", "--parsable2", "show", "associations"): ok(ASSOCS),
        ("sbatch",): ok("1;aipool2\n"),
    }
    for c in ("aipool", "aipool2"):
        answers[("sinfo", "-M", c)] = ok((DATA / f"sinfo-{c}.json").read_text())
        answers[("squeue", "-M", c)] = ok((DATA / f"squeue-{c}.json").read_text())
    return ReplayRunner(answers)


@click.group()
def cli() -> None:
    """What ``aipool`` mounts."""


cli.add_command(clusters)
for command in COMMANDS:
    cli.add_command(command)


def run(runner: ReplayRunner, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    obj = {
        "slurm_client": SlurmClient(runner),
        "jobspec_settings": Settings(state_dir=tmp_path / "state", cluster="lab"),
    }
    res = CliRunner().invoke(cli, list(args), obj=obj, catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def test_clusters_shows_every_cluster_with_free_capacity(tmp_path: Path) -> None:
    code, out, _ = run(recorded(), tmp_path, "clusters")
    assert code == 0
    assert "aipool: 2 running, 0 pending" in out
    assert "aipool2: 0 running, 0 pending" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "gpus a100 0" in lines["gpu1"]
    assert "gpus a100 1" in lines["gpu2"]
    assert "gpus a100 4" in lines["bgpu1"]
    data = json.loads(run(recorded(), tmp_path, "clusters", "--json")[1])
    assert [c["cluster"] for c in data] == ["aipool", "aipool2"]


def test_pick_sends_a_big_gpu_job_to_the_cluster_with_room(tmp_path: Path) -> None:
    code, out, err = run(
        recorded(), tmp_path, "clusters", "pick", "--gpus", "2", "--account", "nlp"
    )
    assert code == 0
    assert out.strip() == "aipool2"
    assert "aipool: full now" in err
    # one card is still free on aipool's gpu2, and aipool has the bigger free CPU pool
    code, out, _ = run(recorded(), tmp_path, "clusters", "pick", "--cpus", "16")
    assert out.strip() == "aipool"
    code, out, _ = run(recorded(), tmp_path, "clusters", "pick", "--gpus", "1", "--account", "x")
    assert code == 1
    assert "account x has no association there" in _


def test_submit_auto_goes_to_the_picked_cluster(tmp_path: Path) -> None:
    spec = tmp_path / "train.yaml"
    spec.write_text(
        "name: train\nproject: nlp\ncommand: [python, train.py]\nresources: {gpus: 2}\n"
    )
    runner = recorded()
    code, out, err = run(
        runner, tmp_path, "submit", "--no-check-paths", "--cluster", "auto", str(spec)
    )
    assert code == 0, err
    assert out.strip() == "1\ttrain"
    assert "cluster aipool2 (gpu, starts now)" in err
    sbatch = [argv for argv, _ in runner.calls if argv[0] == "sbatch"]
    assert sbatch[0][:4] == ("sbatch", "--parsable", "-M", "aipool2")


def test_submit_to_an_unknown_cluster_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\ncommand: [hostname]\n")
    runner = recorded()
    code, _, err = run(
        runner, tmp_path, "submit", "--no-check-paths", "--cluster", "mars", str(spec)
    )
    assert code == 1
    assert "unknown cluster 'mars' (known: aipool, aipool2)" in err
    assert not [argv for argv, _ in runner.calls if argv[0] == "sbatch"]


def test_jobs_of_all_clusters_name_their_cluster(tmp_path: Path) -> None:
    code, out, _ = run(recorded(), tmp_path, "jobs", "--cluster", "all", "--all")
    assert code == 0
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [("2", "aipool"), ("3", "aipool")]
    assert out.splitlines()[0].split()[:2] == ["JOBID", "CLUSTER"]
