"""The prometheus role without a cluster: its settings are checked, and the scrape
configuration it renders from an inventory lists every daemon's metrics address and passes
``promtool check config`` (the template task's own ``validate:``).

Starting Prometheus with it is tested for real in tests/integration/test_ansible.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.ansible.test_roles import ANSIBLE, BIN, _run
from tests.unit.prometheus.promtool import promtool

ROLE = ANSIBLE / "roles" / "prometheus"
RULES = ANSIBLE.parent / "ops" / "prometheus" / "aipool.rules.yml"


def inventory() -> dict[str, Any]:
    """A controller (policy daemon, Prometheus), a portal host, a compute host with two
    slurmd and one with a single node; the compute hosts reached by their addresses."""
    return {
        "all": {
            "hosts": {
                "ctl": {"ansible_connection": "local"},
                "web": {"ansible_host": "10.0.0.9", "aipool_portal_bind": "0.0.0.0"},  # noqa: S104
                "gpu1": {
                    "ansible_host": "10.0.1.1",
                    "slurm_compute_nodes": [{"name": "g1a"}, {"name": "g1b"}],
                },
                "gpu2": {"ansible_host": "10.0.1.2", "aipool_node_agent_metrics_port": 9300},
            },
            "children": {
                "slurm_controller": {"hosts": {"ctl": {}}},
                "aipool_portal": {"hosts": {"web": {}}},
                "slurm_compute": {"hosts": {"gpu1": {}, "gpu2": {}}},
            },
        }
    }


def render(tmp_path: Path, **settings: Any) -> tuple[int, str, Path]:
    """Run the role's checks and the tasks that write Prometheus's files, into ``tmp_path``
    (nothing is started); returns (exit code, output, configuration dir)."""
    conf = tmp_path / "etc" / "prometheus"
    play = [
        {
            "name": "render the scrape configuration",
            "hosts": "ctl",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Validate the settings",
                    "ansible.builtin.include_role": {
                        "name": "prometheus",
                        "tasks_from": "validate",
                        "public": True,
                    },
                },
                {
                    "name": "Create the configuration directory",
                    "ansible.builtin.file": {"path": str(conf), "state": "directory"},
                },
                {
                    "name": "Install the rules, the token and the configuration",
                    "ansible.builtin.include_role": {"name": "prometheus", "tasks_from": "config"},
                },
                # the restart they notify would start Prometheus: not here
                {"name": "Stop before the handlers", "ansible.builtin.meta": "end_play"},
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory()))
    # the role finds the rules by its own path (role_path), which a play outside it lacks
    base = {
        "aipool_prefix": str(tmp_path),
        "prometheus_config_dir": str(conf),
        "prometheus_rules_src": str(RULES),
    }
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({**base, **settings}))
    argv = [
        str(BIN / "ansible-playbook"),
        "-i",
        str(tmp_path / "inventory.yml"),
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        f"@{tmp_path / 'vars.yml'}",
        str(tmp_path / "play.yml"),
    ]
    done = _run(argv)
    return done.returncode, done.stdout + done.stderr, conf


def jobs(conf: Path) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((conf / "prometheus.yml").read_text())
    assert doc["rule_files"] == [str(conf / "aipool.rules.yml")]
    return {j["job_name"]: j for j in doc["scrape_configs"]}


def targets(job: dict[str, Any]) -> list[str]:
    return [t for c in job["static_configs"] for t in c["targets"]]


def test_every_daemon_of_the_inventory_is_scraped(tmp_path: Path) -> None:
    promtool()
    rc, out, conf = render(tmp_path, aipool_portal_metrics_token="s3cret")
    assert rc == 0, out[-4000:]
    found = jobs(conf)
    assert set(found) == {"aipool-policy", "aipool-node", "aipool-portal"}
    assert targets(found["aipool-policy"]) == ["127.0.0.1:9101"]
    # one agent per slurmd of a host, on consecutive ports; a host's own port setting
    assert targets(found["aipool-node"]) == ["10.0.1.1:9102", "10.0.1.1:9103", "10.0.1.2:9300"]
    portal = found["aipool-portal"]
    assert targets(portal) == ["10.0.0.9:8080"]  # bound to all addresses: its host's address
    assert portal["authorization"]["credentials_file"] == str(conf / "aipool-portal.token")
    assert "s3cret" not in (conf / "prometheus.yml").read_text()


def test_what_is_off_is_not_scraped(tmp_path: Path) -> None:
    promtool()
    rc, out, conf = render(
        tmp_path,
        aipool_policy_metrics="",
        aipool_node_agent_metrics_bind="",
        prometheus_extra_scrape_configs=[
            {"job_name": "aipool-health", "static_configs": [{"targets": ["127.0.0.1:9103"]}]}
        ],
    )
    assert rc == 0, out[-4000:]
    # no portal token or allow-list: the portal's /metrics is off
    assert set(jobs(conf)) == {"aipool-health"}


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"prometheus_user": "root"}, "not root"),
        ({"aipool_node_agent_metrics_bind": "gpu.example.org"}, "an IP address"),
    ],
)
def test_bad_settings_stop_the_role(tmp_path: Path, settings: dict[str, Any], words: str) -> None:
    rc, out, conf = render(tmp_path, **settings)
    assert rc != 0
    assert words in out, out[-3000:]
    assert not (conf / "prometheus.yml").exists()
