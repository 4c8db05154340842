"""The lab's slurm.conf / slurmdbd.conf come from the lab config plus gres' renderers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from aipool.lab.config import ACCEL_INVENTORY, DEFAULT_INVENTORY, ELASTIC_POWER, LabConfig
from aipool.lab.daemons import LabError
from aipool.lab.render import partitions, render_lab
from gres.inventory import load_inventory
from gres.render import render_gres_conf


def conf(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out.setdefault(key, value)
    return out


def test_lab_files_are_consistent(tmp_path: Path) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_PORT_OFFSET": "100"})
    inv = load_inventory(DEFAULT_INVENTORY).with_device_dir(str(cfg.dev))
    files = render_lab(cfg, inv, db_password="pw")
    slurm = conf(files["slurm.conf"])
    assert slurm["SlurmctldPort"] == "6917"
    assert cfg.ports.offset == 100  # what a lab beside it shifts from
    assert slurm["StateSaveLocation"] == str(tmp_path / "state")
    assert slurm["GresTypes"] == "gpu,npu,shard"
    assert "gres/npu:910b_vir05" in slurm["AccountingStorageTRES"].split(",")
    assert slurm["CommunicationParameters"] == "NoCtldInAddrAny,NoInAddrAny"
    assert "JobSubmitPlugins" not in slurm
    node_lines = [ln for ln in files["slurm.conf"].splitlines() if ln.startswith("NodeName=")]
    assert [ln.split()[0] for ln in node_lines] == [
        "NodeName=gpu1",
        "NodeName=gpu2",
        "NodeName=npu1",
        "NodeName=npu2",
        "NodeName=cpu1",
    ]
    assert "Port=17101" in node_lines[0]
    assert "Port=17105" in node_lines[4]
    assert files["gres.conf"] == render_gres_conf(inv)
    assert str(cfg.dev) in files["gres.conf"]
    dbd = conf(files["slurmdbd.conf"])
    assert dbd["DbdPort"] == "6919"
    assert dbd["StoragePort"] == "13406"
    assert dbd["StoragePass"] == "pw"


def test_without_loopback_hostname_daemons_bind_any(tmp_path: Path) -> None:
    cfg = LabConfig(root=tmp_path)
    inv = load_inventory(DEFAULT_INVENTORY)
    files = render_lab(cfg, inv, db_password="pw", loopback_only=False)
    assert "CommunicationParameters" not in files["slurm.conf"]
    assert "CommunicationParameters" not in files["slurmdbd.conf"]


def test_partitions_follow_the_devices() -> None:
    parts = {p.name: p for p in partitions(load_inventory(DEFAULT_INVENTORY))}
    assert parts["gpu"].nodes == ("gpu1", "gpu2")
    assert parts["gpu"].default
    assert parts["npu"].nodes == ("npu1", "npu2")
    assert parts["cpu"].nodes == ("cpu1",)


def test_switches_in_the_inventory_turn_on_topology_tree(tmp_path: Path) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path)})
    plain = render_lab(cfg, load_inventory(DEFAULT_INVENTORY), db_password="pw")
    assert "topology.conf" not in plain
    assert "TopologyPlugin" not in plain["slurm.conf"]
    inv = load_inventory(DEFAULT_INVENTORY.parent / "switches.yaml")
    files = render_lab(cfg, inv, db_password="pw")
    assert conf(files["slurm.conf"])["TopologyPlugin"] == "topology/tree"
    assert files["topology.conf"].splitlines()[1:] == [
        "SwitchName=leaf1 Nodes=tgpu1,tgpu3",
        "SwitchName=leaf2 Nodes=tgpu2,tgpu4",
        "SwitchName=root Switches=leaf[1-2]",
    ]


def test_the_accelerator_lab_has_its_own_partition_and_tres(tmp_path: Path) -> None:
    cfg = LabConfig.from_env(
        {"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_INVENTORY": str(ACCEL_INVENTORY)}
    )
    inv = load_inventory(cfg.inventory).with_device_dir(str(cfg.dev))
    assert {p.name: p.nodes for p in partitions(inv)} == {"accel": ("acc1",), "cpu": ("acpu1",)}
    files = render_lab(cfg, inv, db_password="pw")
    slurm = conf(files["slurm.conf"])
    assert slurm["GresTypes"] == "dcu,mlu,xpu"
    assert {"gres/mlu:mlu370", "gres/dcu:k100_ai", "gres/xpu:p800"} <= set(
        slurm["AccountingStorageTRES"].split(",")
    )
    assert "'acc1:mlu') echo \"0 1\"" in files["taskprolog.sh"]
    assert "accel" not in {p.name for p in partitions(load_inventory(DEFAULT_INVENTORY))}


def test_the_default_lab_has_no_power_saving(tmp_path: Path) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path)})
    files = render_lab(cfg, load_inventory(DEFAULT_INVENTORY), db_password="pw")
    assert cfg.power is None
    assert "SuspendTime" not in conf(files["slurm.conf"])
    assert "State=CLOUD" not in files["slurm.conf"]
    assert not [name for name in files if name.startswith("power")]


def test_the_elastic_lab_powers_its_elastic_nodes_through_the_service_user(
    tmp_path: Path,
) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path), "AIPOOL_LAB_ELASTIC": "1"})
    assert cfg.power == ELASTIC_POWER
    files = render_lab(cfg, load_inventory(cfg.inventory), db_password="pw")
    slurm = conf(files["slurm.conf"])
    assert slurm["ResumeProgram"] == str(tmp_path / "etc" / "power-resume.sh")
    assert slurm["SuspendTime"] == "20"
    assert slurm["SuspendExcNodes"] == "gpu1,npu1,cpu1"
    assert slurm["PrivateData"].endswith(",cloud")
    assert "cloud_dns" in slurm["SlurmctldParameters"]
    cloud = [ln.split()[0] for ln in files["slurm.conf"].splitlines() if "State=CLOUD" in ln]
    assert cloud == ["NodeName=egpu1", "NodeName=egpu2", "NodeName=enpu1"]
    script = files["power-resume.sh"]
    assert "setpriv --reuid=aipool --regid=aipool" in script
    assert f"--config {tmp_path}/etc/power.yaml" in script
    power = yaml.safe_load(files["power.yaml"])
    assert power["driver"] == {
        "kind": "lab",
        "helper": ["sudo", "-n", str(tmp_path / "sbin" / "aipool-lab-power")],
    }
    assert power["events"] == str(tmp_path / "power" / "events.jsonl")


def test_a_power_configuration_naming_unknown_nodes_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "power.yaml"
    bad.write_text("nodes: ghost[1-2]\n")
    cfg = replace(LabConfig(root=tmp_path), power=bad)
    with pytest.raises(LabError, match="ghost1, ghost2 are not in"):
        render_lab(cfg, load_inventory(DEFAULT_INVENTORY), db_password="pw")
