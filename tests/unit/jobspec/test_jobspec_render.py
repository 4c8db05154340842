"""Rendering: which job request (seen as its sbatch options) each spec becomes, and what the
script does with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobspec.errors import SpecError
from jobspec.options import ClusterConfig
from jobspec.render import Shell, _finalize, _ident, render
from slurm_plugins.client import labels
from slurm_plugins.client.job import HET_SEPARATOR, Gres
from tests.unit.jobspec.conftest import make


def opts(**fields: object) -> tuple[str, ...]:
    return render(make(**fields)).argv


def test_the_smallest_spec_asks_for_eight_shards() -> None:
    argv = opts(resources={"gpus": 0.25})
    assert "--gres=shard:8" in argv
    assert "--partition=gpu" in argv
    assert "--export=NONE" in argv
    assert "--ntasks=1" in argv
    assert not any(a.startswith("--requeue") for a in argv)


@pytest.mark.parametrize(
    ("resources", "partition", "gres"),
    [
        ({"gpus": 2, "gpu_type": "a100"}, "gpu", "--gres=gpu:a100:2"),
        ({"gpus": 1}, "gpu", "--gres=gpu:1"),
        ({"gpus": "3/4"}, "gpu", "--gres=shard:24"),
        ({"npus": 2, "npu_type": "910b"}, "npu", "--gres=npu:910b:2"),
        ({"npus": 1}, "npu", "--gres=npu:1"),
        ({"cpus": 2}, "cpu", None),
    ],
)
def test_devices_choose_partition_and_gres(
    resources: dict[str, object], partition: str, gres: str | None
) -> None:
    argv = opts(resources=resources)
    assert f"--partition={partition}" in argv
    assert [a for a in argv if a.startswith("--gres")] == ([gres] if gres else [])


def test_partitions_come_from_the_cluster_config_or_the_spec() -> None:
    cfg = ClusterConfig(gpu_partition="a100q", cpu_partition="batch")
    assert "--partition=a100q" in render(make(resources={"gpus": 1}), cfg).argv
    assert "--partition=batch" in render(make(), cfg).argv
    assert "--partition=debug" in render(make(partition="debug"), cfg).argv


def test_priority_classes_map_to_qos() -> None:
    assert "--qos=high" in opts(priority="high")
    assert "--qos=normal" in opts(priority="medium")
    assert "--qos=low" in opts(priority="low")


def test_output_goes_to_outputs_then_workdir_then_the_submit_directory() -> None:
    assert "--output=/o/hello-%j.out" in opts(outputs="/o", workdir="/w")
    assert "--output=/w/hello-%j.out" in opts(workdir="/w")
    assert "--chdir=/w" in opts(workdir="/w")
    assert "--output=hello-%j.out" in opts()


def test_restart_policy() -> None:
    assert "--requeue" in opts(restart={"on_node_failure": True})
    assert "--no-requeue" in opts(restart={"on_node_failure": False})
    assert "--requeue" in opts(restart={"max_restarts": 1, "on_failure": True})
    script = render(make(restart={"max_restarts": 2, "on_failure": True})).script
    assert "AIPOOL_MAX_RESTARTS=2" in script
    assert 'scontrol requeue "$SLURM_JOB_ID"' in script
    assert "scontrol requeue" not in render(make(restart={"max_restarts": 2})).script


def test_dependencies_by_id_and_by_name() -> None:
    spec = make(dependencies={"afterok": [5, "prep"], "afterany": ["clean"]})
    argv = render(spec, dependencies={"prep": 11, "clean": 12}).argv
    assert "--dependency=afterok:5:11,afterany:12" in argv
    assert "--kill-on-invalid-dep=yes" in argv
    with pytest.raises(SpecError, match="no job id for prep, clean"):
        render(spec)


def test_affinity_and_mail() -> None:
    argv = opts(
        affinity={"features": ["a100", "ib"], "nodes": ["gpu1"], "exclude": ["gpu[2-3]"]},
        notify={"email": "a@b.org", "events": ["begin", "time_limit"]},
    )
    assert "--constraint=a100&ib" in argv
    assert "--nodelist=gpu1" in argv
    assert "--exclude=gpu[2-3]" in argv
    assert "--mail-user=a@b.org" in argv
    assert "--mail-type=BEGIN,TIME_LIMIT" in argv


def test_the_comment_carries_the_name_and_labels_for_the_policy_daemon() -> None:
    (comment,) = [a for a in opts(affinity={"anti_affinity_group": "sweep-1"}) if "comment" in a]
    assert labels.decode(comment.split("=", 1)[1]) == {
        "name": "hello",
        "anti_affinity": "sweep-1",
    }
    assert labels.decode("pin=node2") == {}


def test_heterogeneous_jobs_are_components_separated_by_colons() -> None:
    spec = make(
        topology={
            "kind": "ps_worker",
            "roles": {
                "ps": {"resources": {"cpus": 2}},
                "worker": {"replicas": 3, "resources": {"gpus": 1}},
            },
        },
        resources={"time": 30},
        project="vision",
    )
    argv = render(spec).argv
    first, second = " ".join(argv).split(f" {HET_SEPARATOR} ")
    assert "--partition=cpu --nodes=1 --ntasks-per-node=1 --cpus-per-task=2" in first
    assert "--partition=gpu --nodes=3 --ntasks-per-node=1 --gres=gpu:1" in second
    for part in (first, second):
        assert "--account=vision" in part
        assert "--qos=normal" in part
        assert "--time=30" in part
    assert "--export=NONE" in first
    assert "--export=NONE" not in second
    request = render(spec).request
    ps, workers = request.components
    assert (ps.nodes, ps.gres, workers.nodes, workers.gres) == (1, (), 3, (Gres("gpu", 1),))
    assert request.gres_totals() == {"gpu": 3}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("single", 'aipool_run "${AIPOOL_PROGRAM[@]}"'),
        ("multi_gpu", "torchrun --standalone"),
        ("ddp", "exec torchrun --nnodes="),
        ("mpi", "mpirun -np"),
    ],
)
def test_each_topology_has_its_launcher(kind: str, expected: str) -> None:
    res = {"gpus": 2} if kind == "multi_gpu" else {}
    script = render(make(topology=kind, resources=res)).script
    assert expected in script


def test_processes_per_node_default_to_one_per_card() -> None:
    assert "AIPOOL_NPROC_PER_NODE=4" in render(make(topology="ddp", resources={"gpus": 4})).script
    spec = make(topology="ddp", resources={"gpus": 4, "tasks_per_node": 2})
    assert "AIPOOL_NPROC_PER_NODE=2" in render(spec).script
    assert "--ntasks-per-node=3" in opts(topology="mpi", resources={"tasks_per_node": 3})


def test_mounts_resolve_under_the_roots_and_are_checked_in_the_job() -> None:
    cfg = ClusterConfig(data_root="/lake", model_root="/zoo")
    spec = make(
        mounts=[
            {"name": "imagenet-1k", "path": "imagenet"},
            {"name": "llama", "path": "llama/7b", "kind": "model", "mode": "rw"},
            {"name": "abs", "path": "/x/y"},
        ]
    )
    script = render(spec, cfg).script
    assert "export AIPOOL_DATA_IMAGENET_1K=/lake/imagenet" in script
    assert "aipool_check_mount AIPOOL_MODEL_LLAMA /zoo/llama/7b rw" in script
    assert "export AIPOOL_DATA_ABS=/x/y" in script


def test_software_environment_lines() -> None:
    script = render(make(modules=["cuda/12.1", "gcc"], conda="torch")).script
    assert "module load cuda/12.1 gcc" in script
    assert 'eval "$(conda shell.bash hook)"' in script
    assert "conda activate torch" in script
    assert "set +u" in script
    cfg = ClusterConfig(conda_sh="/opt/conda/etc/profile.d/conda.sh")
    assert ". /opt/conda/etc/profile.d/conda.sh" in render(make(conda="/envs/t"), cfg).script
    assert "module load" not in render(make()).script


def test_finalize_quotes_everything_but_our_own_shell() -> None:
    assert _finalize("a b") == "'a b'"
    assert _finalize(3) == "3"
    assert _finalize(Shell("a b")) == "a b"
    with pytest.raises(TypeError):
        _finalize(None)
    with pytest.raises(TypeError):
        _finalize(True)
    with pytest.raises(ValueError, match="identifier"):
        _ident("A B")


def test_dry_run_command_line_is_copy_pasteable() -> None:
    line = render(make(name="x", env={"A": "b"})).command_line()
    assert line.startswith("sbatch --parsable --job-name=x ")
    assert line.endswith(" < script")


def test_single_process_runs_and_reports_failure(tmp_path: Path) -> None:
    ok = render(make(command=["true"])).script
    bad = render(make(command=["false"])).script
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = [
        subprocess.run(
            ["bash", "-s"],
            input=s,
            text=True,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            check=False,
        )
        for s in (ok, bad)
    ]
    assert [r.returncode for r in run] == [0, 1]


def test_restart_limit_stops_a_job_requeued_too_often(tmp_path: Path) -> None:
    script = render(make(command=["true"], restart={"max_restarts": 1})).script
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SLURM_RESTART_COUNT": "2"}
    done = subprocess.run(
        ["bash", "-s"],
        input=script,
        text=True,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1
    assert "more than max_restarts (1)" in done.stderr
