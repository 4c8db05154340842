"""Renderers: golden files for every example inventory plus the rules behind them."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gres.inventory import Inventory, load_inventory
from gres.render import (
    accounting_tres,
    gres_types,
    npu_index_map,
    render_all,
    render_gres_conf,
    render_node_lines,
    render_task_prolog,
)

Golden = Callable[[Path, str], None]
REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "gres"
INVENTORIES = {
    "lab": REPO / "gres" / "examples" / "lab.yaml",
    "teaching-lab": REPO / "gres" / "examples" / "teaching-lab.yaml",
    "gpu-pool": REPO / "gres" / "examples" / "gpu-pool.yaml",
    "domestic-accel": REPO / "gres" / "examples" / "domestic-accel.yaml",
    "edge-cases": DATA / "inventories" / "edge-cases.yaml",
}
LAB_EXTRA = {
    name: {"NodeHostname": "localhost", "NodeAddr": "127.0.0.1", "Port": str(17001 + i)}
    for i, name in enumerate(("gpu1", "gpu2", "npu1", "npu2", "cpu1"))
}


def _settings(rendered: dict[str, str]) -> str:
    return "".join(f"{k}={rendered[k]}\n" for k in ("GresTypes", "AccountingStorageTRES"))


@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_golden_files(name: str, golden: Golden) -> None:
    rendered = render_all(load_inventory(INVENTORIES[name]))
    out = DATA / "golden" / name
    golden(out / "gres.conf", rendered["gres.conf"])
    golden(out / "nodes.conf", rendered["nodes.conf"])
    golden(out / "taskprolog.sh", rendered["taskprolog.sh"])
    golden(out / "settings.conf", _settings(rendered))


def test_golden_lab_with_node_addresses(golden: Golden) -> None:
    inv = load_inventory(INVENTORIES["lab"]).with_device_dir("/tmp/aipool-lab/dev")
    rendered = render_all(inv, LAB_EXTRA)
    golden(DATA / "golden" / "lab-local" / "nodes.conf", rendered["nodes.conf"])
    golden(DATA / "golden" / "lab-local" / "gres.conf", rendered["gres.conf"])


@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_rendering_is_deterministic(name: str) -> None:
    assert render_all(load_inventory(INVENTORIES[name])) == render_all(
        load_inventory(INVENTORIES[name])
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_task_prolog_is_valid_bash(name: str, tmp_path: Path) -> None:
    script = tmp_path / "taskprolog.sh"
    script.write_text(render_task_prolog(load_inventory(INVENTORIES[name])))
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_task_prolog_passes_shellcheck(name: str, tmp_path: Path) -> None:
    script = tmp_path / "taskprolog.sh"
    script.write_text(render_task_prolog(load_inventory(INVENTORIES[name])))
    proc = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def _inv(name: str) -> Inventory:
    return load_inventory(INVENTORIES[name])


def test_lab_lines() -> None:
    lines = render_node_lines(_inv("lab"), LAB_EXTRA).splitlines()
    assert lines[0] == (
        "NodeName=gpu1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001 CPUs=16 Boards=1 "
        "SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000 "
        "Gres=gpu:a100:4,shard:128 Feature=a100,gpu"
    )
    assert lines[2].endswith("Gres=npu:910b:8 Feature=910b,ascend,npu")
    assert lines[3].endswith(
        "Gres=npu:910b:2,npu:910b_vir05:4,npu:910b_vir10:2 Feature=910b,ascend,npu,vnpu"
    )
    assert lines[4].endswith("RealMemory=64000 Feature=cpu")
    assert "Gres=" not in lines[4]


def test_gres_conf_of_the_lab() -> None:
    conf = render_gres_conf(_inv("lab").with_device_dir("/x"))
    assert "AutoDetect=off\n" in conf
    assert "NodeName=gpu1 Name=gpu Type=a100 File=/x/nvidia[0-3]\n" in conf
    assert "NodeName=gpu1 Name=shard Count=128\n" in conf
    assert "NodeName=npu1 Name=npu Type=910b File=/x/davinci[0-7]\n" in conf


@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_shard_lines_only_on_nodes_with_gpus(name: str) -> None:
    inv = _inv(name)
    shard_nodes = re.findall(r"^NodeName=(\S+) Name=shard ", render_gres_conf(inv), re.M)
    assert shard_nodes == [n.name for n in inv.nodes if n.gpus]
    for node in inv.nodes:
        count = re.search(
            rf"^NodeName={node.name} Name=shard Count=(\d+)$", render_gres_conf(inv), re.M
        )
        assert (int(count[1]) if count else 0) == len(node.gpus) * node.shards_per_gpu


def test_vnpus_replace_their_physical_card() -> None:
    node = _inv("gpu-pool").node("asc07")
    conf = render_gres_conf(Inventory(nodes=(node,)))
    assert "Type=910b File=/dev/davinci[0-5]\n" in conf
    assert "davinci6" not in conf
    assert "davinci7" not in conf
    assert "Type=910b_vir10 File=/dev/vdavinci[100-101]\n" in conf
    assert "Type=910b_vir05 File=/dev/vdavinci[102-105]\n" in conf
    assert conf.index("Type=910b ") < conf.index("Type=910b_vir10")
    assert npu_index_map(node) == [0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105]
    line = render_node_lines(Inventory(nodes=(node,)))
    assert "Gres=npu:910b:6,npu:910b_vir05:4,npu:910b_vir10:2 " in line


def test_index_map_follows_gres_conf_order() -> None:
    node = _inv("edge-cases").node("mixed-npu")
    files = re.findall(r"File=\S+", render_gres_conf(Inventory(nodes=(node,))))
    assert files == [
        "File=/srv/fake-dev/davinci[1-2]",
        "File=/srv/fake-dev/davinci3",
        "File=/srv/fake-dev/vdavinci[120-122]",
        "File=/srv/fake-dev/vdavinci[130-131]",
    ]
    assert npu_index_map(node) == [1, 2, 3, 120, 121, 122, 130, 131]


def test_non_contiguous_devices_get_one_line_per_run() -> None:
    conf = render_gres_conf(Inventory(nodes=(_inv("edge-cases").node("mixed-gpu"),)))
    assert re.findall(r"Type=(\S+) File=(\S+)", conf) == [
        ("a100", "/srv/fake-dev/nvidia[0-1]"),
        ("t4", "/srv/fake-dev/nvidia2"),
        ("a100", "/srv/fake-dev/nvidia[4-5]"),
        ("t4", "/dev/special/gpu9"),
    ]


def test_features_add_models_and_classes_sorted_once() -> None:
    line = render_node_lines(Inventory(nodes=(_inv("edge-cases").node("mixed-gpu"),)))
    assert line.rstrip().endswith("Feature=a100,alpha,gpu,t4,zeta")


def test_types_and_accounting() -> None:
    assert gres_types(_inv("lab")) == ["gpu", "npu", "shard"]
    assert accounting_tres(_inv("lab")) == [
        "gres/gpu",
        "gres/gpu:a100",
        "gres/shard",
        "gres/npu",
        "gres/npu:910b",
        "gres/npu:910b_vir05",
        "gres/npu:910b_vir10",
    ]
    pool = accounting_tres(_inv("gpu-pool"))
    assert pool[-3:] == ["gres/npu:910b", "gres/npu:910b_vir05", "gres/npu:910b_vir10"]
    cpu_only = load_inventory("nodes:\n - {name: c1, cpus: 1, memory_mb: 1}")
    assert gres_types(cpu_only) == []
    assert accounting_tres(cpu_only) == []
    npu_only = Inventory(nodes=(_inv("lab").node("npu1"),))
    assert gres_types(npu_only) == ["npu"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"nope": {"Port": "1"}}, "not in the inventory"),
        ({"gpu1": {"CPUs": "4"}}, "rendered from the inventory"),
        ({"gpu1": {"Port": "1 Gres=gpu:9"}}, "not a plain slurm.conf value"),
        ({"gpu1": {"Port": "1\nNodeName=evil"}}, "not a plain slurm.conf value"),
        ({"gpu1": {"Port": ""}}, "not a plain slurm.conf value"),
        ({"gpu1": {"Node Addr": "x"}}, "not a slurm.conf node keyword"),
    ],
)
def test_extra_settings_are_checked(extra: dict[str, dict[str, str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        render_node_lines(_inv("lab"), extra)


def test_render_all_keys() -> None:
    rendered = render_all(_inv("lab"))
    assert set(rendered) == {
        "gres.conf",
        "nodes.conf",
        "taskprolog.sh",
        "GresTypes",
        "AccountingStorageTRES",
    }
    assert rendered["GresTypes"] == "gpu,npu,shard"
