"""The Ansible side without a cluster: ansible-lint, the example inventories, input checks.

The deployment itself is tested for real in tests/integration/test_ansible.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ANSIBLE = Path(__file__).resolve().parents[3] / "ansible"
BIN = Path(sys.executable).parent


def _run(argv: list[str], cwd: Path = ANSIBLE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )


def test_ansible_lint_passes() -> None:
    done = _run([str(BIN / "ansible-lint"), "--nocolor"])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "Passed" in done.stdout + done.stderr


def _hosts(inventory: str) -> dict[str, list[str]]:
    done = _run([str(BIN / "ansible-inventory"), "-i", f"inventories/{inventory}", "--list"])
    assert done.returncode == 0, done.stderr
    data = yaml.safe_load(done.stdout)

    def members(group: str) -> list[str]:
        g = data.get(group, {})
        return sorted(
            {*g.get("hosts", []), *(h for c in g.get("children", []) for h in members(c))}
        )

    return {g: members(g) for g in ("slurm_controller", "slurm_dbd", "slurm_compute")}


def test_gpu_pool_inventory_has_58_nodes() -> None:
    hosts = _hosts("gpu-pool/hosts.yml")
    assert len(hosts["slurm_compute"]) == 58
    assert any(h.startswith("asc") for h in hosts["slurm_compute"])  # Ascend
    assert any(h.startswith("hgxh") for h in hosts["slurm_compute"])  # NVIDIA
    assert hosts["slurm_controller"] == ["mgmt1.pool.example.org"]
    assert hosts["slurm_dbd"] == ["mgmt2.pool.example.org"]


def test_teaching_lab_inventory() -> None:
    hosts = _hosts("teaching-lab/hosts.yml")
    assert len(hosts["slurm_compute"]) == 12
    assert hosts["slurm_controller"] == hosts["slurm_dbd"] == ["head.lab.example.edu"]


@pytest.mark.parametrize("inventory", ["teaching-lab/hosts.yml", "gpu-pool/hosts.yml"])
def test_site_playbook_syntax(inventory: str) -> None:
    done = _run(
        [
            str(BIN / "ansible-playbook"),
            "-i",
            f"inventories/{inventory}",
            "site.yml",
            "--syntax-check",
        ]
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_dbd_refuses_retention_under_180_days(tmp_path: Path) -> None:
    """The validate stage stops a run whose purge settings keep less than 180 days."""
    play = [
        {
            "name": "validate only",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Validate slurmdbd settings",
                    "ansible.builtin.include_role": {
                        "name": "slurm_dbd",
                        "tasks_from": "validate",
                    },
                }
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    settings = {
        "aipool_prefix": str(tmp_path / "root"),
        "slurm_dbd_storage_pass": "0123456789abcdef0123",
        "slurm_dbd_purge_days": {"job": 30},
    }
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(settings))
    argv = [
        str(BIN / "ansible-playbook"),
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        f"@{tmp_path / 'vars.yml'}",
        str(tmp_path / "play.yml"),
    ]
    done = _run(argv)
    assert done.returncode != 0
    assert "at least 180 days" in done.stdout, done.stdout[-3000:]
