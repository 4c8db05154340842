"""Host probes with injected stand-ins: a fake pynvml module, recorded npu-smi output, /proc."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from gres.errors import ProbeError
from gres.inventory import Inventory, load_inventory
from gres.npusmi import normalise_npu_model, parse_npu_smi_info
from gres.probe import (
    normalise_gpu_model,
    parse_cpuinfo,
    parse_meminfo,
    probe_gpus,
    probe_host,
    probe_npus,
)

SAMPLES = Path(__file__).resolve().parents[3] / "tests" / "data" / "npu-smi"
GIB = 1024**3


# --- a fake pynvml -------------------------------------------------------------------------------


class FakeNVMLError(Exception):
    pass


class FakeNotSupported(FakeNVMLError):
    pass


class FakeLibraryNotFound(FakeNVMLError):
    pass


@dataclass
class Card:
    name: str | bytes
    total: int
    uuid: str
    minor: int
    mig: int | None = None  # None: the card has no MIG (NVML says NotSupported)


@dataclass
class FakeNvml:
    """The part of the pynvml API the probe uses, with the same names and return shapes."""

    cards: list[Card]
    init_error: Exception | None = None
    broken_index: int | None = None
    calls: list[str] = field(default_factory=list)

    NVMLError = FakeNVMLError
    NVML_DEVICE_MIG_ENABLE = 1

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Card:
        if index == self.broken_index:
            raise FakeNVMLError("GPU is lost")
        return self.cards[index]

    def nvmlDeviceGetName(self, handle: Card) -> str | bytes:
        return handle.name

    def nvmlDeviceGetMemoryInfo(self, handle: Card) -> SimpleNamespace:
        return SimpleNamespace(total=handle.total, free=handle.total, used=0)

    def nvmlDeviceGetUUID(self, handle: Card) -> str:
        return handle.uuid

    def nvmlDeviceGetMinorNumber(self, handle: Card) -> int:
        return handle.minor

    def nvmlDeviceGetMigMode(self, handle: Card) -> list[int]:
        if handle.mig is None:
            raise FakeNotSupported("Not Supported")
        return [handle.mig, handle.mig]


def _dgx() -> FakeNvml:
    # NVML enumerates by PCI bus id; minor numbers need not follow that order.
    return FakeNvml(
        [
            Card("NVIDIA A100-SXM4-40GB", 40 * GIB, "GPU-aaaa-0001", minor=1, mig=0),
            Card(b"NVIDIA A100-SXM4-40GB", 40 * GIB, "GPU-aaaa-0000", minor=0, mig=1),
            Card("NVIDIA H200", 143771 * 1024 * 1024, "GPU-bbbb-0002", minor=2),
        ]
    )


def test_probe_gpus_reads_every_card() -> None:
    nvml = _dgx()
    gpus = probe_gpus(nvml, device_dir="/dev")
    assert [(g.index, g.model, g.memory_mib, g.device) for g in gpus] == [
        (0, "a100", 40960, "/dev/nvidia0"),
        (1, "a100", 40960, "/dev/nvidia1"),
        (2, "h200", 143771, "/dev/nvidia2"),
    ]
    assert [g.uuid for g in gpus] == ["GPU-aaaa-0000", "GPU-aaaa-0001", "GPU-bbbb-0002"]
    assert [g.mig for g in gpus] == [True, False, False]
    assert nvml.calls == ["init", "shutdown"]


@pytest.mark.parametrize(
    "error", [FakeLibraryNotFound("NVML Shared Library Not Found"), OSError("libnvidia-ml.so.1")]
)
def test_no_driver_means_no_gpus(error: Exception) -> None:
    assert probe_gpus(FakeNvml([], init_error=error)) == ()


def test_a_card_that_cannot_be_read_is_an_error() -> None:
    nvml = _dgx()
    nvml.broken_index = 1
    with pytest.raises(ProbeError, match="GPU is lost"):
        probe_gpus(nvml)
    assert nvml.calls == ["init", "shutdown"]


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA A100-SXM4-40GB", "a100"),
        ("NVIDIA A100 80GB PCIe", "a100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 NVL", "h100"),
        ("Tesla V100-SXM2-16GB", "v100"),
        ("Tesla V100S-PCIE-32GB", "v100s"),
        ("Tesla T4", "t4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 3090 Ti", "rtx3090ti"),
        ("Quadro RTX 8000", "rtx8000"),
        ("NVIDIA RTX A6000", "rtxa6000"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx6000ada"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "h100"),
        ("", "gpu"),
        ("???", "gpu"),
    ],
)
def test_normalise_gpu_model(name: str, model: str) -> None:
    assert normalise_gpu_model(name) == model


# --- npu-smi -----------------------------------------------------------------------------------


def test_parse_910b3_atlas_800t_a2() -> None:
    chips = parse_npu_smi_info((SAMPLES / "atlas-800t-a2-910b3.txt").read_text())
    assert [c.device_id for c in chips] == list(range(8))
    assert {(c.name, c.model, c.health, c.hbm_mib, c.chip_id) for c in chips} == {
        ("910B3", "910b", "OK", 65536, 0)
    }
    assert chips[0].bus_id == "0000:C1:00.0"
    assert chips[0].capacity_mib == 65536


def test_parse_910a_atlas_800_9010() -> None:
    chips = parse_npu_smi_info((SAMPLES / "atlas-800-9010-910a.txt").read_text())
    assert [c.device_id for c in chips] == list(range(8))
    assert {(c.model, c.hbm_mib, c.memory_mib) for c in chips} == {("910", 32768, 15077)}


def test_parse_a3_two_chips_per_npu() -> None:
    chips = parse_npu_smi_info((SAMPLES / "atlas-a3-ascend910.txt").read_text())
    assert len(chips) == 16
    assert [c.device_id for c in chips] == list(range(16))
    assert [(c.npu_id, c.chip_id) for c in chips[:3]] == [(0, 0), (0, 1), (1, 0)]
    assert {c.model for c in chips} == {"910c"}
    assert chips[-1].bus_id == "0000:83:00.0"


def test_parse_310_four_chips_with_device_column() -> None:
    chips = parse_npu_smi_info((SAMPLES / "atlas-800-3000-310.txt").read_text())
    assert [(c.npu_id, c.chip_id, c.device_id) for c in chips] == [(6, i, i + 3) for i in range(4)]
    assert {(c.name, c.model, c.capacity_mib) for c in chips} == {("310", "310", 8192)}


@pytest.mark.parametrize(
    "text", ["", "There is no NPU card on this server.\n", "| a | b |\n", "+----+\n| x |"]
)
def test_parse_nothing(text: str) -> None:
    assert parse_npu_smi_info(text) == []


@pytest.mark.parametrize(
    ("name", "a3", "model"),
    [
        ("910B1", False, "910b"),
        ("910B4", False, "910b"),
        ("Ascend910B3", False, "910b"),
        ("910A", False, "910"),
        ("910ProB", False, "910"),
        ("910B", False, "910"),
        ("Ascend910", True, "910c"),
        ("Ascend910", False, "910"),
        ("310P3", False, "310p"),
        ("310B1", False, "310b"),
        ("310", False, "310"),
        ("xxx", False, "xxx"),
        ("??", False, "npu"),
    ],
)
def test_normalise_npu_model(name: str, a3: bool, model: str) -> None:
    assert normalise_npu_model(name, a3_layout=a3) == model


def _fake_tool(tmp_path: Path, body: str) -> list[str]:
    tool = tmp_path / "npu-smi"
    tool.write_text(f"#!/bin/bash\n{body}\n")
    tool.chmod(0o755)
    return [str(tool)]


def test_probe_npus_from_the_tool(tmp_path: Path) -> None:
    sample = SAMPLES / "atlas-a3-ascend910.txt"
    tool = _fake_tool(tmp_path, f'[ "$1" = info ] && cat "{sample}"')
    npus = probe_npus(tool, device_dir="/dev")
    assert [n.index for n in npus] == list(range(16))
    assert npus[15].device == "/dev/davinci15"
    assert {(n.model, n.memory_mib) for n in npus} == {("910c", 65536)}


def test_missing_npu_smi_means_no_npus(tmp_path: Path) -> None:
    assert probe_npus([str(tmp_path / "no-such-tool")]) == ()


def test_failing_npu_smi_is_an_error(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path, 'echo "dcmi module initialize failed" >&2; exit 3')
    with pytest.raises(ProbeError, match="exit code 3: dcmi module initialize failed"):
        probe_npus(tool)


def test_hanging_npu_smi_times_out(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path, "exec sleep 10")
    with pytest.raises(ProbeError, match="did not answer"):
        probe_npus(tool, timeout=0.3)


# --- CPU, memory, the host -----------------------------------------------------------------------


def _x86_cpuinfo(sockets: int, cores: int, threads: int) -> str:
    blocks = []
    n = 0
    for t in range(threads):
        for s in range(sockets):
            for c in range(cores):
                blocks.append(
                    f"processor\t: {n}\nvendor_id\t: GenuineIntel\nphysical id\t: {s}\n"
                    f"siblings\t: {cores * threads}\ncore id\t\t: {c}\ncpu cores\t: {cores}\n"
                    f"flags\t\t: fpu vme{' ht' if t else ''}\n"
                )
                n += 1
    return "\n".join(blocks) + "\n"


@pytest.mark.parametrize(("sockets", "cores", "threads"), [(2, 8, 1), (2, 4, 2), (1, 1, 1)])
def test_parse_cpuinfo_x86(sockets: int, cores: int, threads: int) -> None:
    topo = parse_cpuinfo(_x86_cpuinfo(sockets, cores, threads))
    assert (topo.cpus, topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (
        sockets * cores * threads,
        sockets,
        cores,
        threads,
    )


def test_parse_cpuinfo_arm_has_no_topology() -> None:
    text = "".join(f"processor\t: {i}\nBogoMIPS\t: 200.00\nCPU part\t: 0xd01\n\n" for i in range(4))
    topo = parse_cpuinfo(text)
    assert (topo.cpus, topo.sockets, topo.cores_per_socket, topo.threads_per_core) == (4, 1, 4, 1)


def test_parse_cpuinfo_falls_back_to_the_cpu_count() -> None:
    topo = parse_cpuinfo("", fallback_cpus=6)
    assert (topo.cpus, topo.sockets, topo.cores_per_socket) == (6, 1, 6)


def test_parse_meminfo() -> None:
    assert parse_meminfo("MemTotal:       65536000 kB\nMemFree: 1 kB\n") == 64000
    with pytest.raises(ProbeError, match="MemTotal"):
        parse_meminfo("nothing here")


@pytest.fixture
def proc_dir(tmp_path: Path) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text(_x86_cpuinfo(2, 8, 1))
    (proc / "meminfo").write_text("MemTotal:       65536000 kB\n")
    return proc


def test_probe_host_gpu_node(proc_dir: Path, tmp_path: Path) -> None:
    node = probe_host("gpu9", nvml=_dgx(), npu_smi=[str(tmp_path / "absent")], proc_dir=proc_dir)
    assert (node.name, node.cpus, node.sockets, node.cores_per_socket, node.memory_mb) == (
        "gpu9",
        16,
        2,
        8,
        64000,
    )
    assert node.gpu_models == ("a100", "h200")
    assert node.npus == ()
    inv = Inventory(nodes=(node,))
    assert load_inventory(inv.to_yaml()) == inv


def test_probe_host_npu_node(proc_dir: Path, tmp_path: Path) -> None:
    sample = SAMPLES / "atlas-800t-a2-910b3.txt"
    tool = _fake_tool(tmp_path, f'cat "{sample}"')
    no_driver = FakeNvml([], init_error=FakeLibraryNotFound("not found"))
    node = probe_host("npu9", nvml=no_driver, npu_smi=tool, proc_dir=proc_dir)
    assert [n.device for n in node.npus] == [f"/dev/davinci{i}" for i in range(8)]
    assert node.gpus == ()
    inv = Inventory(nodes=(node,))
    assert load_inventory(inv.to_yaml()) == inv


def test_probe_host_cpu_only_with_the_real_modules(tmp_path: Path) -> None:
    """No GPU driver and no npu-smi here: a CPU-only node, not a crash."""
    node = probe_host("cpu9", npu_smi=[str(tmp_path / "absent")])
    assert node.cpus >= 1
    assert node.memory_mb > 0
    assert node.npus == ()


def test_probe_host_rejects_odd_host_names(proc_dir: Path) -> None:
    with pytest.raises(ProbeError, match="--name"):
        probe_host("bad name", nvml=FakeNvml([]), proc_dir=proc_dir)


def test_probe_host_unreadable_proc(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="cannot read"):
        probe_host("n1", nvml=FakeNvml([]), proc_dir=tmp_path / "missing")
