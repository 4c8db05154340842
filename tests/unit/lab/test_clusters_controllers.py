"""The lab's further clusters and backup controllers: ports, paths and rendered configs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from aipool.lab.config import DEFAULT_INVENTORY, MEMBER_INVENTORY, LabConfig
from aipool.lab.daemons import LabError
from aipool.lab.nsexec import main as nsexec_main
from aipool.lab.nsexec import nsexec_argv
from aipool.lab.render import render_lab
from gres.inventory import load_inventory


def lines(text: str, key: str) -> list[str]:
    return [ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith(f"{key}=")]


def render(cfg: LabConfig, inventory: Path = DEFAULT_INVENTORY) -> str:
    inv = load_inventory(inventory).with_device_dir(str(cfg.dev))
    return render_lab(cfg, inv, db_password="pw")["slurm.conf"]


def test_one_controller_renders_as_before(tmp_path: Path) -> None:
    conf = render(LabConfig(root=tmp_path))
    assert lines(conf, "SlurmctldHost") == ["localhost(127.0.0.1)"]
    assert lines(conf, "SlurmctldTimeout") == []
    assert lines(conf, "SlurmctldPidFile") == [f"{tmp_path}/run/slurmctld.pid"]


def test_three_controllers_share_the_state_directory(tmp_path: Path) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_CONTROLLERS": "3"})
    conf = render(cfg)
    assert lines(conf, "SlurmctldHost") == [
        "aipool-ctl1(127.0.2.1)",
        "aipool-ctl2(127.0.2.2)",
        "aipool-ctl3(127.0.2.3)",
    ]
    assert lines(conf, "SlurmctldTimeout") == ["5"]
    assert lines(conf, "StateSaveLocation") == [f"{tmp_path}/state"]
    # each controller bind-mounts its own run/ctld-N here
    assert lines(conf, "SlurmctldPidFile") == [f"{tmp_path}/run/ctld/slurmctld.pid"]
    with pytest.raises(ValueError, match=r"controllers must be 1\.\.3"):
        LabConfig().with_controllers(4)
    with pytest.raises(ValueError, match="AIPOOL_LAB_CONTROLLERS must be an integer"):
        LabConfig.from_env({"AIPOOL_LAB_CONTROLLERS": "two"})


def test_a_second_cluster_has_its_own_ports_and_shares_the_slurmdbd(tmp_path: Path) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_PORT_OFFSET": "300"})
    b = cfg.member(2)
    assert b.cluster == "aipool2"
    assert b.root == tmp_path / "clusters" / "aipool2"
    assert (b.ports.slurmctld, b.ports.slurmd_base) == (7147, 17331)
    assert (b.ports.slurmdbd, b.ports.mariadb) == (cfg.ports.slurmdbd, cfg.ports.mariadb)
    assert cfg.member(3).ports.slurmctld == 7177  # still below the next lab's (offset 400)
    conf = render(b, MEMBER_INVENTORY)
    assert lines(conf, "ClusterName") == ["aipool2"]
    assert lines(conf, "AccountingStoragePort") == ["7119"]
    assert lines(conf, "StateSaveLocation") == [f"{b.root}/state"]
    nodes = [ln.split()[0] for ln in conf.splitlines() if ln.startswith("NodeName=")]
    assert nodes == ["NodeName=bgpu1", "NodeName=bcpu1"]
    assert "Port=17331" in conf
    with pytest.raises(ValueError, match=r"cluster index must be 2\.\.3"):
        cfg.member(4)


def test_nsexec_command_line_keeps_the_daemon_argv_last() -> None:
    argv = nsexec_argv("/py", "aipool-ctl2", [("/h", "/etc/hosts")], ["slurmctld", "-D"])
    assert argv[:6] == ["unshare", "--uts", "--mount", "--propagation", "slave", "--"]
    assert argv[argv.index("--hostname") + 1] == "aipool-ctl2"
    assert argv[argv.index("--bind") : argv.index("--bind") + 3] == ["--bind", "/h", "/etc/hosts"]
    assert argv[-3:] == ["--", "slurmctld", "-D"]


def test_nsexec_needs_a_command() -> None:
    with pytest.raises(SystemExit):
        nsexec_main(["--hostname", "x", "--"])


def test_a_running_lab_keeps_its_shape(tmp_path: Path) -> None:
    """Fewer clusters or other controllers need `down` first; more clusters are added."""
    cfg = LabConfig(root=tmp_path)
    me = {"pid": os.getpid(), "expect": "python"}  # a daemon that is certainly running
    ledger = {"daemons": {"slurmctld": me}, "users_created": [], "clusters": 2, "controllers": 1}
    tmp_path.joinpath("lab.json").write_text(json.dumps(ledger))
    lab = Lab(cfg)
    with pytest.raises(LabError, match="runs 2 clusters: `aipool lab down` it before"):
        lab._set_shape(lab.ledger(), 1, None)
    with pytest.raises(LabError, match=r"runs 1 controller\(s\)"):
        lab._set_shape(lab.ledger(), None, 3)
    with pytest.raises(LabError, match=r"--clusters must be 1\.\.3"):
        lab._set_shape(lab.ledger(), 4, None)
    lab._set_shape(lab.ledger(), 3, None)
    assert lab.cluster_count == 3
    assert [m.cluster for m in lab.members()] == ["aipool2", "aipool3"]
    # a lab brought up with backups keeps them for every later `Lab()` of the same root
    ledger["controllers"] = 3
    tmp_path.joinpath("lab.json").write_text(json.dumps(ledger))
    assert Lab(LabConfig(root=tmp_path)).cfg.controllers == 3


def test_a_shifted_lab_serves_its_portal_on_a_shifted_port(tmp_path: Path) -> None:
    assert LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path)}).ports.portal == 8080
    shifted = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_PORT_OFFSET": "500"})
    assert shifted.ports.portal == 8580
