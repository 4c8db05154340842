"""The node agent's per-node figures (CPU, memory, network, disks) and its cards' errors."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.metrics_core import Metric

from gres.device import DeviceHealth, DeviceSample
from slurm_plugins.node.agent import Agent
from slurm_plugins.node.health import HealthReporter
from slurm_plugins.node.metrics import CardView, HostReading, NodeMetrics, read_host
from slurm_plugins.node.report import Clock, DiskCounters, FsUsage, NetCounters
from tests.unit.metrics.scheme import check_scheme, values

HOST = HostReading(
    cpus=8,
    cpu_seconds={"user": 120.5, "idle": 900.0, "iowait": 3.0},
    memory_total=64 * 2**30,
    memory_available=40 * 2**30,
    net={
        "eth0": NetCounters(bytes_sent=500, bytes_recv=7000, errin=1, dropout=2),
        "lo": NetCounters(bytes_sent=9, bytes_recv=9),
        "veth1a2b": NetCounters(bytes_sent=9, bytes_recv=9),
    },
    disk={"nvme0n1": DiskCounters(read_bytes=4096, write_bytes=8192, busy_ms=2500)},
    fs={"/": FsUsage(total=1000, used=600, free=400)},
)
HEALTH = (
    DeviceHealth("gpu", 0, ecc_uncorrected=0),
    DeviceHealth("gpu", 1, ("2 uncorrected ECC error(s)", "xid 79"), ("xid 13",), 2),
    DeviceHealth("npu", 4, ("npu-smi health Alarm",)),
)


def test_the_node_in_base_units() -> None:
    fam = check_scheme(collected(CardView("lab", "n1", (), host=HOST)))
    assert values(fam["aipool_node_cpus"]) == {("lab", "n1"): 8}
    assert values(fam["aipool_node_cpu_seconds"], node="n1") == {
        ("lab", "idle"): 900.0,
        ("lab", "iowait"): 3.0,
        ("lab", "user"): 120.5,
    }
    assert values(fam["aipool_node_memory_available_bytes"]) == {("lab", "n1"): 40 * 2**30}
    # loopback and per-container interfaces are left out: the label stays bounded
    assert values(fam["aipool_node_network_received_bytes"]) == {("lab", "eth0", "n1"): 7000}
    assert values(fam["aipool_node_network_errors"]) == {("lab", "eth0", "n1"): 3}
    assert values(fam["aipool_node_disk_busy_seconds"]) == {("lab", "nvme0n1", "n1"): 2.5}
    assert values(fam["aipool_node_filesystem_free_bytes"], mount="/") == {("lab", "n1"): 400}


def test_card_errors_are_one_set_for_gpus_and_npus() -> None:
    fam = check_scheme(collected(CardView("lab", "n1", (), HEALTH)))
    assert values(fam["aipool_card_errors"], node="n1") == {
        ("0", "lab", "gpu"): 0,
        ("1", "lab", "gpu"): 2,
        ("4", "lab", "npu"): 1,
    }
    assert values(fam["aipool_card_warnings"], card="1") == {("lab", "gpu", "n1"): 1}
    # the ECC count only where the card keeps one
    assert values(fam["aipool_card_ecc_uncorrected_errors"]) == {
        ("0", "lab", "gpu", "n1"): 0,
        ("1", "lab", "gpu", "n1"): 2,
    }


def test_no_health_report_no_error_families() -> None:
    view = CardView("lab", "n1", (DeviceSample("gpu", 0, 10.0),))
    fam = check_scheme(collected(view))
    assert "aipool_card_errors" not in fam
    assert "aipool_node_cpus" not in fam  # the host not read: nothing made up
    assert "aipool_card_utilisation_ratio" in fam


class HealthyProbe:
    def __init__(self) -> None:
        self.kinds = ("gpu",)
        self.expected = {"gpu": 2}

    def devices(self) -> tuple[DeviceHealth, ...]:
        return HEALTH[:2]


class NoCards:
    devices: tuple[DeviceSample, ...] = ()

    def sample(self) -> dict[int, float]:
        return {}


def test_a_pass_publishes_its_health_report_and_host(tmp_path: Path) -> None:
    reporter = HealthReporter(
        "n1", HealthyProbe(), clock_probe=Clock, time_source=lambda: 9.0, with_counters=False
    )
    metrics = NodeMetrics()
    Agent(NoCards(), tmp_path, "n1", reporter, metrics, "lab", host=lambda: HOST).run_once()
    assert (tmp_path / "n1.health.json").is_file()  # the report is still written
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_card_errors"]) == {
        ("0", "lab", "gpu", "n1"): 0,
        ("1", "lab", "gpu", "n1"): 2,
    }
    assert values(fam["aipool_node_memory_total_bytes"]) == {("lab", "n1"): 64 * 2**30}


def test_this_host_reads() -> None:
    h = read_host()
    assert h.cpus >= 1
    assert 0 < h.memory_available <= h.memory_total
    assert h.cpu_seconds["idle"] > 0
    check_scheme(collected(CardView("lab", "here", (), host=h)))


def collected(view: CardView) -> list[Metric]:
    m = NodeMetrics()
    m.saw(view)
    return list(m.registry.collect())
