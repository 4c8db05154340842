"""Malformed inventories: every problem is reported with the path of the field at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from gres.errors import InventoryError
from gres.inventory import load_inventory

NODE = "{name: n1, cpus: 16, memory_mb: 1000"


def _node(extra: str = "") -> str:
    return f"nodes:\n  - {NODE}{', ' + extra if extra else ''}}}\n"


CASES: list[tuple[str, str, list[str]]] = [
    ("empty nodes", "nodes: []", ["nodes: must list at least one node"]),
    ("no nodes key", "shards_per_gpu: 32\n", ["nodes: required field is missing"]),
    ("not a mapping", "- a\n- b\n", ["(root): must be a mapping"]),
    ("scalar document", "just text\n", ["(root): must be a mapping"]),
    (
        "gpu count zero",
        "nodes:\n  - {name: a, cpus: 1, memory_mb: 1}\n"
        "  - {name: b, cpus: 1, memory_mb: 1, gpus: [{model: a100, count: 0}]}\n",
        ["nodes[1].gpus[0].count: must be at least 1"],
    ),
    ("unknown node key", _node("gpu: []"), ["nodes[0].gpu: unknown field"]),
    ("unknown top key", "node: []\n" + _node(), ["node: unknown field"]),
    (
        "unknown gpu key",
        _node("gpus: [{model: a100, memory: 5}]"),
        ["nodes[0].gpus[0].memory: unknown field"],
    ),
    ("missing cpus", "nodes:\n  - {name: a, memory_mb: 1}", ["nodes[0].cpus: required field"]),
    ("bool as int", _node("sockets: true"), ["nodes[0].sockets: must be an integer"]),
    ("string as int", _node("threads_per_core: '2'"), ["nodes[0].threads_per_core: must be an"]),
    ("negative memory", _node("gpus: [{model: t4, memory_mib: -1}]"), ["memory_mib: must be at"]),
    ("shards too many", "shards_per_gpu: 129\n" + _node(), ["shards_per_gpu: must be between 1"]),
    ("node shards zero", _node("shards_per_gpu: 0"), ["nodes[0].shards_per_gpu: must be between"]),
    ("upper-case model", _node("gpus: [{model: A100}]"), ["nodes[0].gpus[0].model: 'A100' is not"]),
    ("gpu not a mapping", _node("gpus: [a100]"), ["nodes[0].gpus[0]: must be a mapping"]),
    ("gpus not a list", _node("gpus: {model: a100}"), ["nodes[0].gpus: must be a list"]),
    ("feature token", _node("features: ['a&b']"), ["nodes[0].features[0]: 'a&b' is not a simple"]),
    ("relative device", _node("gpus: [{model: t4, device: dev/x}]"), ["gpus[0].device: 'dev/x'"]),
    (
        "device_dir",
        "device_dir: 'https://gh.072103.xyz/dev/my dir'\n" + _node(),
        ["device_dir: 'https://gh.072103.xyz/dev/my dir' is not"],
    ),
    ("version", "version: 2\n" + _node(), ["version: must be 1"]),
    ("mig not bool", _node("gpus: [{model: t4, mig: 'yes'}]"), ["gpus[0].mig: must be true or"]),
    (
        "duplicate names",
        _node() + "  - {name: n1, cpus: 1, memory_mb: 1}\n",
        ["nodes[1].name: duplicate node name 'n1' (see nodes[0])"],
    ),
    (
        "duplicate names via range",
        "nodes:\n  - {name: 'n[1-2]', cpus: 1, memory_mb: 1}\n"
        "  - {name: n2, cpus: 1, memory_mb: 1}",
        ["nodes[1].name: duplicate node name 'n2' (see nodes[0])"],
    ),
    (
        "bad node name",
        "nodes:\n  - {name: 'gpu.1', cpus: 1, memory_mb: 1}",
        ["nodes[0].name: 'gpu.1'"],
    ),
    (
        "reserved name",
        "nodes:\n  - {name: DEFAULT, cpus: 1, memory_mb: 1}",
        ["is reserved by Slurm"],
    ),
    (
        "bad range",
        "nodes:\n  - {name: 'n[2-1]', cpus: 1, memory_mb: 1}",
        ["nodes[0].name: 'n[2-1]'"],
    ),
    (
        "cpu shape",
        _node("sockets: 2, cores_per_socket: 4, threads_per_core: 1"),
        ["nodes[0].cpus: must equal sockets*cores_per_socket*threads_per_core (8)"],
    ),
    (
        "cpus not divisible",
        _node("sockets: 3"),
        ["nodes[0].cores_per_socket: cannot be derived: 16 CPUs"],
    ),
    (
        "duplicate gpu index",
        _node("gpus: [{model: a100, count: 2}, {model: t4, index: 1}]"),
        ["nodes[0].gpus[1].index: device 1 is already listed at nodes[0].gpus[0]"],
    ),
    (
        "device on a counted entry",
        _node("gpus: [{model: a100, count: 2, device: /dev/x}]"),
        ["nodes[0].gpus[0].device: only allowed on an entry with count 1"],
    ),
    (
        "shared device file",
        _node("gpus: [{model: a100, device: /dev/davinci0}], npus: [{model: 910b}]"),
        ["nodes[0].npus[0].device: /dev/davinci0 is already used by nodes[0].gpus[0]"],
    ),
    (
        "vnpu on missing npu",
        _node("npus: [{model: 910b}], vnpus: [{npu: 3, template: vir10_3c_32g}]"),
        ["nodes[0].vnpus[0].npu: this node has no NPU 3"],
    ),
    (
        "unknown template",
        _node("npus: [{model: 910b}], vnpus: [{npu: 0, template: vir20}]"),
        [
            "nodes[0].vnpus[0].template: unknown template 'vir20' "
            "(known: vir05_1c_16g, vir10_3c_32g)"
        ],
    ),
    (
        "template on wrong model",
        _node("npus: [{model: '910'}], vnpus: [{npu: 0, template: vir10_3c_32g}]"),
        ["nodes[0].vnpus[0].template: vir10_3c_32g is not available on 910 NPUs (only 910b)"],
    ),
    (
        "overfilled npu",
        _node(
            "npus: [{model: 910b}], vnpus: [{npu: 0, template: vir10_3c_32g},"
            " {npu: 0, template: vir05_1c_16g, count: 3}]"
        ),
        ["nodes[0].vnpus[1].count: NPU 0 would be split into 5/4 of a card (at most 1)"],
    ),
    (
        "vnpu id reused",
        _node(
            "npus: [{model: 910b, count: 2}], vnpus: [{npu: 0, template: vir10_3c_32g, id: 5},"
            " {npu: 1, template: vir10_3c_32g, id: 5}]"
        ),
        ["nodes[0].vnpus[1].id: vNPU id 5 is used twice"],
    ),
    (
        "npu model clashing with vnpu types",
        _node("npus: [{model: 910b_vir10}]"),
        ["nodes[0].npus[0].model: '_vir10' is kept for vNPU types"],
    ),
    (
        "duplicate key",
        "nodes:\n  - name: a\n    name: b\n",
        ["line 3, column 5: invalid YAML: duplicate"],
    ),
    ("yaml syntax", "nodes:\n  - {name: a\n", ["line 3, column 1: invalid YAML"]),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_inventory_names_the_field(text: str, expected: list[str]) -> None:
    with pytest.raises(InventoryError) as info:
        load_inventory(text)
    errors = info.value.errors
    for want in expected:
        assert any(want in line for line in errors), f"{want!r} not in {errors}"
    assert str(info.value) == "\n".join(errors)


def test_all_problems_are_reported_at_once() -> None:
    text = _node("sockets: 0, gpus: [{model: a100, count: 0}], bogus: 1")
    with pytest.raises(InventoryError) as info:
        load_inventory(text)
    assert len(info.value.errors) == 3


def test_a_node_range_reports_each_problem_once() -> None:
    text = (
        "nodes:\n  - {name: 'g[1-8]', cpus: 1, memory_mb: 1,"
        " gpus: [{model: t4, count: 2, uuid: GPU-1}]}"
    )
    with pytest.raises(InventoryError) as info:
        load_inventory(text)
    assert info.value.errors == ("nodes[0].gpus[0].uuid: only allowed on an entry with count 1",)


def test_missing_file_is_an_inventory_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="cannot read inventory"):
        load_inventory(tmp_path / "nope.yaml")
