"""Inventory data model: loading, derived views, re-rooting and the YAML round trip."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gres.examples import example_path
from gres.inventory import (
    TEMPLATES,
    Gpu,
    Inventory,
    NodeInventory,
    Npu,
    Vnpu,
    load_inventory,
)

Example = Callable[[str], Inventory]
EXAMPLES = ("lab", "teaching-lab", "gpu-pool")


def test_lab_inventory_is_what_the_lab_expects(example: Example) -> None:
    inv = example("lab")
    assert inv.names == ("gpu1", "gpu2", "npu1", "npu2", "cpu1")
    for node in inv.nodes:
        assert (node.cpus, node.sockets, node.cores_per_socket, node.threads_per_core) == (
            16,
            2,
            8,
            1,
        )
        assert node.memory_mb == 64000
    gpu1 = inv.node("gpu1")
    assert [g.device for g in gpu1.gpus] == [f"/dev/nvidia{i}" for i in range(4)]
    assert {(g.model, g.memory_mib) for g in gpu1.gpus} == {("a100", 40960)}
    assert gpu1.shard_count == 128
    npu1 = inv.node("npu1")
    assert [n.device for n in npu1.npus] == [f"/dev/davinci{i}" for i in range(8)]
    assert npu1.whole_npu_models == ("910b",)
    assert inv.node("cpu1").device_classes == ("cpu",)


def test_derived_views_of_a_node_with_vnpus(example: Example) -> None:
    node = example("gpu-pool").node("asc07")
    assert node.split_npu_indexes == frozenset({6, 7})
    assert [n.index for n in node.whole_npus] == [0, 1, 2, 3, 4, 5]
    assert node.vnpu_types == ("910b_vir05", "910b_vir10")
    assert [v.vnpu_id for v in node.vnpus] == [100, 101, 102, 103, 104, 105]
    assert [v.device for v in node.vnpus][:2] == ["/dev/vdavinci100", "/dev/vdavinci101"]
    assert sum(v.fraction for v in node.vnpus) == 2
    assert node.shard_count == 0
    assert node.device_classes == ("npu",)


def test_templates_table() -> None:
    assert TEMPLATES["vir10_3c_32g"].fraction == Fraction(1, 2)
    assert TEMPLATES["vir05_1c_16g"].fraction == Fraction(1, 4)
    assert {t.suffix for t in TEMPLATES.values()} == {"vir10", "vir05"}


def test_node_ranges_expand_with_padding(example: Example) -> None:
    names = example("gpu-pool").names
    assert names[:2] == ("hgxa01", "hgxa02")
    assert "cpu16" in names
    assert len(names) == len(set(names))


def test_node_overrides_shards_and_device_dir() -> None:
    inv = load_inventory(
        """
shards_per_gpu: 8
device_dir: /srv/dev
nodes:
  - {name: a, cpus: 2, memory_mb: 100, gpus: [{model: t4}]}
  - {name: b, cpus: 2, memory_mb: 100, shards_per_gpu: 4, device_dir: /x,
     gpus: [{model: t4, index: 3}]}
"""
    )
    a, b = inv.nodes
    assert (a.shards_per_gpu, a.gpus[0].device) == (8, "/srv/dev/nvidia0")
    assert (b.shards_per_gpu, b.gpus[0].device, b.gpus[0].index) == (4, "/x/nvidia3", 3)
    assert (a.sockets, a.cores_per_socket, a.threads_per_core) == (1, 2, 1)


def test_indexes_continue_from_the_previous_entry() -> None:
    inv = load_inventory(
        "nodes:\n - {name: a, cpus: 1, memory_mb: 1, gpus: [{model: a100, count: 2},"
        " {model: h100, count: 2}, {model: t4, index: 7}]}"
    )
    assert [(g.index, g.model) for g in inv.nodes[0].gpus] == [
        (0, "a100"),
        (1, "a100"),
        (2, "h100"),
        (3, "h100"),
        (7, "t4"),
    ]


def test_empty_device_keys_mean_none() -> None:
    inv = load_inventory(
        "nodes:\n  - name: a\n    cpus: 1\n    memory_mb: 1\n    gpus:\n    features:\n"
    )
    assert (inv.nodes[0].gpus, inv.nodes[0].features) == ((), ())


def test_numeric_model_names_are_read_as_text() -> None:
    inv = load_inventory("nodes:\n - {name: a, cpus: 1, memory_mb: 1, npus: [{model: 910}]}")
    assert inv.nodes[0].npus[0].model == "910"


def test_with_device_dir_reroots_every_device(example: Example) -> None:
    inv = example("gpu-pool").with_device_dir("/tmp/lab/dev")
    devices = [
        *(g.device for n in inv.nodes for g in n.gpus),
        *(p.device for n in inv.nodes for p in n.npus),
        *(v.device for n in inv.nodes for v in n.vnpus),
    ]
    assert devices
    assert all(d.startswith("/tmp/lab/dev/") for d in devices)
    assert inv.node("asc07").vnpus[0].device == "/tmp/lab/dev/vdavinci100"
    assert load_inventory(inv.to_yaml()) == inv
    with pytest.raises(ValueError, match="absolute"):
        inv.with_device_dir("relative/dev")
    with pytest.raises(ValueError, match="absolute path of letters"):
        inv.with_device_dir("/tmp/my lab/dev")
    assert inv.with_device_dir("/tmp/x/").nodes[-1].name == inv.nodes[-1].name


def test_load_accepts_paths_and_text(repo: Path) -> None:
    path = repo / "gres" / "examples" / "lab.yaml"
    by_path = load_inventory(path)
    assert load_inventory(str(path)) == by_path
    assert load_inventory(path.read_text()) == by_path


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_round_trip(example: Example, name: str) -> None:
    inv = example(name)
    assert load_inventory(inv.to_yaml()) == inv
    assert load_inventory(json.dumps(inv.to_dict())) == inv


def test_dump_is_compact_for_conventional_devices(example: Example) -> None:
    text = example("lab").to_yaml()
    assert "- {model: a100, count: 4, memory_mib: 40960}" in text
    assert "device:" not in text


# --- property: any inventory survives to_yaml → load_inventory unchanged -------------------

_names = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True).filter(
    lambda n: n not in {"default", "all"}
)
_gpu_models = st.sampled_from(["a100", "h100", "l40s", "rtx4090", "t4"])
_npu_models = st.sampled_from(["910b", "910", "310p"])
_dirs = st.sampled_from(["/dev", "/tmp/lab/dev"])


@st.composite
def _gpus(draw: st.DrawFn, ddir: str) -> tuple[Gpu, ...]:
    indexes = sorted(draw(st.sets(st.integers(0, 15), max_size=6)))
    out = []
    for i in indexes:
        odd = draw(st.booleans())
        out.append(
            Gpu(
                index=i,
                model=draw(_gpu_models),
                memory_mib=draw(st.sampled_from([0, 40960, 81920])),
                device=f"/dev/dri/card{i}" if odd else f"{ddir}/nvidia{i}",
                uuid=draw(st.none() | st.just(f"GPU-{i:08x}-aaaa")),
                mig=draw(st.booleans()),
            )
        )
    return tuple(out)


@st.composite
def _npus_and_vnpus(draw: st.DrawFn, ddir: str) -> tuple[tuple[Npu, ...], tuple[Vnpu, ...]]:
    indexes = sorted(draw(st.sets(st.integers(0, 15), max_size=8)))
    npus = tuple(
        Npu(index=i, model=draw(_npu_models), device=f"{ddir}/davinci{i}", memory_mib=65536)
        for i in indexes
    )
    layouts = [["vir10_3c_32g"] * 2, ["vir10_3c_32g", "vir05_1c_16g"], ["vir05_1c_16g"] * 4]
    vnpus: list[Vnpu] = []
    next_id = 100
    for npu in npus:
        if npu.model != "910b" or not draw(st.booleans()):
            continue
        for template in draw(st.sampled_from(layouts)):
            next_id += draw(st.integers(0, 3))
            vnpus.append(Vnpu(npu.index, template, next_id, f"{ddir}/vdavinci{next_id}"))
            next_id += 1
    return npus, tuple(vnpus)


@st.composite
def _nodes(draw: st.DrawFn, name: str) -> NodeInventory:
    sockets, cores, threads = (
        draw(st.integers(1, 4)),
        draw(st.integers(1, 64)),
        draw(st.integers(1, 2)),
    )
    ddir = draw(_dirs)
    npus, vnpus = draw(_npus_and_vnpus(ddir))
    return NodeInventory(
        name=name,
        cpus=sockets * cores * threads,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
        memory_mb=draw(st.integers(1, 4_000_000)),
        features=tuple(sorted(draw(st.sets(st.sampled_from(["ib", "nvlink", "x.1"]))))),
        gpus=draw(_gpus(ddir)),
        npus=npus,
        vnpus=vnpus,
        shards_per_gpu=draw(st.integers(1, 128)),
    )


@st.composite
def _inventories(draw: st.DrawFn) -> Inventory:
    names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    return Inventory(nodes=tuple(draw(_nodes(n)) for n in names))


@settings(max_examples=150, deadline=None)
@given(_inventories())
def test_any_inventory_round_trips_through_yaml(inv: Inventory) -> None:
    assert load_inventory(inv.to_yaml()) == inv


def test_example_path() -> None:
    assert example_path("lab").name == "lab.yaml"
    assert example_path("gpu-pool.yaml").is_file()
    with pytest.raises(
        FileNotFoundError, match="known: domestic-accel, gpu-pool, lab, switches, teaching-lab"
    ):
        example_path("nope")
    with pytest.raises(FileNotFoundError):
        example_path("../inventory")
