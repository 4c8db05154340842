"""The launch logic of the scripts, run by bash against stand-ins for srun, scontrol and
torchrun: ranks, role addresses, TF_CONFIG / MASTER_* / DMLC_* and how a failed role ends
the job. (The lab integration tests run the same scripts on real Slurm.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobspec.options import ClusterConfig
from jobspec.render import render
from jobspec.schema import load_spec
from tests.unit.jobspec.conftest import make

FAKE_SCONTROL = r"""#!/bin/bash
case "$1 $2" in
  "show hostnames") tr ',' '\n' <<< "$3" ;;
  "show node") echo "NodeName=$4 Arch=x86_64 NodeAddr=10.0.0.${4//[!0-9]/} NodeHostName=$4 Ver=1" ;;
  *) echo "scontrol $*" >> "$FAKE_LOG" ;;
esac
"""
FAKE_SRUN = r"""#!/bin/bash
group=""
opts=()
while [[ "$1" == --* ]]; do
  case "$1" in --het-group=*) group="${1#*=}" ;; esac
  opts+=("$1")
  shift
done
echo "srun ${opts[*]}" >> "$FAKE_LOG"
if [ -n "$group" ]; then var="SLURM_JOB_NODELIST_HET_GROUP_$group"; nodes="${!var}"
else nodes="$SLURM_JOB_NODELIST"; fi
IFS=, read -r -a list <<< "$nodes"
pids=()
for i in "${!list[@]}"; do
  SLURM_PROCID=$i SLURM_NODEID=$i SLURMD_NODENAME="${list[$i]}" "$@" &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' TERM
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit "$rc"
"""
FAKE_TORCHRUN = r"""#!/bin/bash
echo "torchrun $*" >> "$FAKE_LOG"
while [ "$1" != --no-python ]; do shift; done
shift
exec "$@"
"""
REPORT = (
    "import json, os; "
    "keys = ['AIPOOL_ROLE', 'AIPOOL_ROLE_INDEX', 'AIPOOL_ADDRESS', 'TF_CONFIG', 'MASTER_ADDR', "
    "'MASTER_PORT', 'RANK', 'WORLD_SIZE', 'DMLC_ROLE', 'DMLC_PS_ROOT_URI', 'DMLC_PS_ROOT_PORT', "
    "'DMLC_NUM_SERVER', 'DMLC_NUM_WORKER', 'SLURMD_NODENAME']; "
    "print(json.dumps({k: os.environ.get(k) for k in keys}), "
    "file=open(os.environ['FAKE_OUT'], 'a'), flush=True)"
)


def run_job(script: str, tmp_path: Path, **env: str) -> tuple[int, list[dict[str, Any]], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in {
        "scontrol": FAKE_SCONTROL,
        "srun": FAKE_SRUN,
        "torchrun": FAKE_TORCHRUN,
    }.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    out, log = tmp_path / "out.jsonl", tmp_path / "log"
    full_env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tmp_path),
        "SLURM_JOB_ID": "1000",
        "FAKE_OUT": str(out),
        "FAKE_LOG": str(log),
        **env,
    }
    done = subprocess.run(
        ["bash", "-s"],
        input=script,
        text=True,
        capture_output=True,
        cwd=tmp_path,
        env=full_env,
        check=False,
        timeout=60,
    )
    lines = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    return done.returncode, lines, (log.read_text() if log.exists() else "") + done.stderr


def het(kind: str, roles: dict[str, Any], **fields: Any) -> str:
    return render(
        make(
            command=[sys.executable, "-c", REPORT],
            topology={"kind": kind, "roles": roles},
            **fields,
        )
    ).script


def by_role(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{x['AIPOOL_ROLE']}{x['AIPOOL_ROLE_INDEX']}": x for x in lines}


def test_ps_worker_gets_tf_config(tmp_path: Path) -> None:
    script = het("ps_worker", {"ps": {}, "worker": {"replicas": 2}})
    rc, lines, log = run_job(
        script,
        tmp_path,
        SLURM_JOB_NODELIST_HET_GROUP_0="cpu1",
        SLURM_JOB_NODELIST_HET_GROUP_1="gpu1,gpu2",
    )
    assert rc == 0, log
    roles = by_role(lines)
    assert sorted(roles) == ["ps0", "worker0", "worker1"]
    # port block of job 1000: 20000 + (1000 % 150) * 64
    base = 20000 + (1000 % 150) * 64
    cluster = {
        "ps": [f"10.0.0.1:{base}"],
        "worker": [f"10.0.0.1:{base + 1}", f"10.0.0.2:{base + 2}"],
    }
    assert json.loads(roles["worker1"]["TF_CONFIG"]) == {
        "cluster": cluster,
        "task": {"type": "worker", "index": 1},
    }
    assert json.loads(roles["ps0"]["TF_CONFIG"])["task"] == {"type": "ps", "index": 0}
    assert roles["worker1"]["AIPOOL_ADDRESS"] == f"10.0.0.2:{base + 2}"
    assert roles["worker1"]["SLURMD_NODENAME"] == "gpu2"
    # each role's task count is given to srun, not left to what the submitter put in the
    # environment (sbatch does, slurmrestd does not)
    srun = sorted(line for line in log.splitlines() if line.startswith("srun "))
    assert srun == [
        "srun --het-group=0 --nodes=1 --ntasks=1 --ntasks-per-node=1 --kill-on-bad-exit=1",
        "srun --het-group=1 --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=1",
    ]


def test_master_worker_gets_ranks(tmp_path: Path) -> None:
    script = het("master_worker", {"master": {}, "worker": {"replicas": 2}})
    rc, lines, log = run_job(
        script,
        tmp_path,
        SLURM_JOB_NODELIST_HET_GROUP_0="cpu1",
        SLURM_JOB_NODELIST_HET_GROUP_1="gpu1,gpu2",
    )
    assert rc == 0, log
    roles = by_role(lines)
    assert {k: (v["RANK"], v["WORLD_SIZE"]) for k, v in roles.items()} == {
        "master0": ("0", "3"),
        "worker0": ("1", "3"),
        "worker1": ("2", "3"),
    }
    assert {v["MASTER_ADDR"] for v in roles.values()} == {"10.0.0.1"}


def test_scheduler_server_worker_gets_dmlc_settings(tmp_path: Path) -> None:
    script = het(
        "scheduler_server_worker",
        {"scheduler": {}, "server": {"replicas": 2}, "worker": {"replicas": 1}},
    )
    rc, lines, log = run_job(
        script,
        tmp_path,
        SLURM_JOB_NODELIST_HET_GROUP_0="cpu1",
        SLURM_JOB_NODELIST_HET_GROUP_1="npu1,npu2",
        SLURM_JOB_NODELIST_HET_GROUP_2="gpu7",
    )
    assert rc == 0, log
    roles = by_role(lines)
    assert sorted(roles) == ["scheduler0", "server0", "server1", "worker0"]
    for name, v in roles.items():
        assert v["DMLC_ROLE"] == name[:-1]
        assert (v["DMLC_PS_ROOT_URI"], v["DMLC_NUM_SERVER"], v["DMLC_NUM_WORKER"]) == (
            "10.0.0.1",
            "2",
            "1",
        )


def test_a_failed_role_stops_the_others_and_fails_the_job(tmp_path: Path) -> None:
    script = het(
        "ps_worker",
        {"ps": {"command": ["sleep", "300"]}, "worker": {"command": ["bash", "-c", "exit 3"]}},
    )
    rc, _, log = run_job(
        script,
        tmp_path,
        SLURM_JOB_NODELIST_HET_GROUP_0="cpu1",
        SLURM_JOB_NODELIST_HET_GROUP_1="gpu1",
    )
    assert rc == 3
    assert "role worker ended with status 3" in log


def test_the_job_ends_when_the_workers_end(tmp_path: Path) -> None:
    script = het(
        "ps_worker", {"ps": {"command": ["sleep", "300"]}, "worker": {"command": ["true"]}}
    )
    rc, _, log = run_job(
        script,
        tmp_path,
        SLURM_JOB_NODELIST_HET_GROUP_0="cpu1",
        SLURM_JOB_NODELIST_HET_GROUP_1="gpu1",
    )
    assert rc == 0, log


@pytest.mark.parametrize("restarts", [0, 1])
def test_on_failure_requeues_while_restarts_are_left(tmp_path: Path, restarts: int) -> None:
    script = render(make(command=["false"], restart={"max_restarts": 1, "on_failure": True})).script
    rc, _, log = run_job(script, tmp_path, SLURM_RESTART_COUNT=str(restarts))
    assert rc == 1
    assert ("scontrol requeue 1000" in log) == (restarts == 0)


def test_ddp_runs_one_torchrun_per_node(tmp_path: Path) -> None:
    spec = make(
        command=[sys.executable, "-c", REPORT], topology="ddp", resources={"nodes": 2, "gpus": 4}
    )
    rc, lines, log = run_job(
        render(spec).script, tmp_path, SLURM_JOB_NODELIST="gpu1,gpu2", SLURM_NNODES="2"
    )
    assert rc == 0, log
    assert len(lines) == 2
    base = 20000 + (1000 % 150) * 64
    assert (
        f"--nnodes=2 --node-rank=0 --nproc-per-node=4 --master-addr=10.0.0.1 "
        f"--master-port={base} --no-python" in log
    )
    assert "--node-rank=1" in log


FAKE_CONDA_SH = r"""
conda() {
  echo "conda $*" >> "$FAKE_LOG"
  if [ "$1" = activate ]; then
    export CONDA_DEFAULT_ENV="$2"
    PATH="$FAKE_ENV_BIN:$PATH"
  fi
}
"""
FAKE_JUPYTER = r"""#!/bin/bash
echo "jupyter $* env=$CONDA_DEFAULT_ENV token=$JUPYTER_TOKEN" >> "$FAKE_LOG"
cp "$AIPOOL_OUTPUT_DIR/jupyter-$SLURM_JOB_ID.json" "$FAKE_OUT"
"""


def test_jupyter_runs_in_its_conda_environment_and_publishes_its_connection(
    tmp_path: Path,
) -> None:
    """The environment is activated before the server starts, the server gets the port and
    token the connection file names, and the file goes when the server ends."""
    env_bin = tmp_path / "env" / "bin"  # `jupyter` exists only inside the environment
    env_bin.mkdir(parents=True)
    (env_bin / "jupyter").write_text(FAKE_JUPYTER)
    (env_bin / "jupyter").chmod(0o755)
    conda_sh = tmp_path / "conda.sh"
    conda_sh.write_text(FAKE_CONDA_SH)
    (tmp_path / "outputs").mkdir()  # submission checks that it exists
    spec = load_spec(
        {
            "name": "nb",
            "jupyter": {"app": "lab"},
            "conda": "torch-2.3",
            "outputs": str(tmp_path / "outputs"),
            "resources": {"cpus": 1},
        }
    )
    script = render(spec, ClusterConfig(conda_sh=str(conda_sh))).script
    rc, _, log = run_job(script, tmp_path, SLURMD_NODENAME="gpu1", FAKE_ENV_BIN=str(env_bin))
    assert rc == 0, log
    conn = json.loads((tmp_path / "out.jsonl").read_text())
    calls = log.splitlines()
    assert calls[0] == "conda activate torch-2.3"
    jupyter = next(c for c in calls if c.startswith("jupyter "))
    assert jupyter.startswith("jupyter lab --no-browser --ip=10.0.0.1 ")
    assert f"--port={conn['port']} " in jupyter
    assert jupyter.endswith(f"env=torch-2.3 token={conn['token']}")
    assert conn["job_id"] == 1000
    assert conn["host"] == "10.0.0.1"
    assert len(conn["token"]) == 48
    assert conn["url"] == f"http://10.0.0.1:{conn['port']}/jupyter/1000/?token={conn['token']}"
    assert conn["base_url"] == "/jupyter/1000/"  # the path the portal proxies
    assert not (tmp_path / "outputs" / "jupyter-1000.json").exists()
