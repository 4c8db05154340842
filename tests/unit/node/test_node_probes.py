"""Device health from the probes: a fake pynvml with NVML's names and shapes, recorded
``npu-smi info`` tables with a chip's Health changed, and the lab's inventory + faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from gres.device import DeviceHealth, xid_problem
from gres.errors import ProbeError
from gres.probe import gpu_health, npu_health
from slurm_plugins.node import Clock
from slurm_plugins.node.health import HealthReporter, InventoryHealth, NvmlHealth

ROOT = Path(__file__).resolve().parents[3]
NPU_SMI = ROOT / "tests" / "data" / "npu-smi"
LAB = ROOT / "gres" / "examples" / "lab.yaml"


class NVMLError(Exception):
    pass


class NotSupported(NVMLError):
    def __str__(self) -> str:
        return "Not Supported"


class Timeout(NVMLError):
    pass


@dataclass
class Card:
    minor: int
    ecc: int | None = 0  # None: not supported
    pages_pending: int = 0
    remap: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    lost: bool = False


@dataclass
class FakeNvml:
    """The NVML calls the health probe and the XID watcher make, with NVML's shapes."""

    cards: list[Card]
    events: list[tuple[int, int]] = field(default_factory=list)  # (card list index, xid)
    inits: int = 0

    NVMLError = NVMLError
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    NVML_FEATURE_ENABLED = 1
    nvmlEventTypeXidCriticalError = 8

    def nvmlInit(self) -> None:
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.inits -= 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Card:
        if self.cards[i].lost:
            raise NVMLError("GPU is lost")
        return self.cards[i]

    def nvmlDeviceGetMinorNumber(self, h: Card) -> int:
        return h.minor

    def nvmlDeviceGetTotalEccErrors(self, h: Card, kind: int, counter: int) -> int:
        assert (kind, counter) == (1, 0)
        if h.ecc is None:
            raise NotSupported
        return h.ecc

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: Card) -> int:
        return h.pages_pending

    def nvmlDeviceGetRemappedRows(self, h: Card) -> tuple[int, int, int, int]:
        if h.remap is None:
            raise NotSupported
        return h.remap

    def nvmlEventSetCreate(self) -> str:
        return "set"

    def nvmlDeviceRegisterEvents(self, h: Card, kinds: int, es: str) -> None:
        assert kinds == 8

    def nvmlEventSetWait_v2(self, es: str, timeout_ms: int) -> SimpleNamespace:
        if not self.events:
            raise Timeout("Timeout")
        i, xid = self.events.pop(0)
        return SimpleNamespace(device=self.cards[i], eventData=xid)


def test_healthy_cards_and_unsupported_checks() -> None:
    nvml = FakeNvml([Card(0), Card(1, ecc=None, remap=None)])
    # the count is kept where the card keeps one (for the agent's metrics), None where not
    assert gpu_health(nvml) == (
        DeviceHealth("gpu", 0, ecc_uncorrected=0),
        DeviceHealth("gpu", 1),
    )
    assert nvml.inits == 0


@pytest.mark.parametrize(
    ("card", "errors"),
    [
        (Card(2, ecc=3), ("3 uncorrected ECC error(s)",)),
        (Card(2, pages_pending=1), ("retired pages pending a reset",)),
        (Card(2, remap=(0, 1, 1, 0)), ("remapped rows pending a reset",)),
        (Card(2, remap=(0, 1, 0, 1)), ("row remapping failed",)),
        (Card(2, lost=True), ("cannot be opened: GPU is lost",)),
    ],
)
def test_card_errors(card: Card, errors: tuple[str, ...]) -> None:
    health = gpu_health(FakeNvml([Card(0), card]))
    assert health[0].ok
    assert health[1].errors == errors
    assert not health[1].ok
    assert health[1].ecc_uncorrected == (None if card.lost else card.ecc)


def test_no_nvml_means_no_gpus() -> None:
    class Broken(FakeNvml):
        def nvmlInit(self) -> None:
            raise NVMLError("Driver Not Loaded")

    assert gpu_health(Broken([Card(0)])) == ()


def test_xids_fatal_or_not_and_how_long_they_are_reported() -> None:
    assert xid_problem(79) == ("xid 79", True)
    assert xid_problem(13) == ("xid 13", False)
    nvml = FakeNvml([Card(0, ecc=None), Card(5, ecc=None)])  # cards without ECC
    now = [1000.0]
    watcher = NvmlHealth(nvml, xid_window_s=60, clock=lambda: now[0])
    nvml.events += [(1, 79), (0, 13)]
    first = watcher.devices()
    assert first == (
        DeviceHealth("gpu", 0, (), ("xid 13",)),
        DeviceHealth("gpu", 5, ("xid 79",)),
    )
    now[0] += 30
    assert watcher.devices() == first  # still within the window
    now[0] += 31
    assert watcher.devices() == (DeviceHealth("gpu", 0), DeviceHealth("gpu", 5))


def _npu_smi_with(health: dict[int, str]) -> str:
    lines = []
    for line in (NPU_SMI / "atlas-800t-a2-910b3.txt").read_text().splitlines():
        cells = line.split("|")
        first = cells[1].split() if len(cells) > 2 else []
        if len(first) == 2 and first[0].isdigit() and int(first[0]) in health:
            cells[2] = f" {health[int(first[0])]:<14}"
        lines.append("|".join(cells))
    return "\n".join(lines)


def test_npu_health_column() -> None:
    text = _npu_smi_with({2: "Alarm", 5: "Warning"})
    health = {d.index: d for d in npu_health(text)}
    assert sorted(health) == list(range(8))
    assert health[2].errors == ("npu-smi health Alarm",)
    assert health[5].warnings == ("npu-smi health Warning",)
    assert health[5].ok
    assert all(health[i] == DeviceHealth("npu", i) for i in (0, 1, 3, 4, 6, 7))


def test_recorded_npu_smi_outputs_are_all_healthy() -> None:
    for f in sorted(NPU_SMI.glob("*.txt")):
        devices = npu_health(f.read_text())
        assert devices, f.name
        assert all(d.ok and not d.warnings for d in devices), f.name


# --- the lab: inventory + faults ------------------------------------------------------------


def test_inventory_devices_with_faults(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    probe = InventoryHealth(LAB, "gpu1", faults)
    assert probe.kinds == ("gpu",)
    assert probe.expected == {"gpu": 4}
    assert probe.devices() == tuple(DeviceHealth("gpu", i) for i in range(4))  # no file yet
    faults.write_text(
        "nodes:\n"
        "  gpu1:\n"
        "    devices:\n"
        "      - {kind: gpu, index: 1, errors: [xid 79]}\n"
        "      - {kind: gpu, index: 3, missing: true}\n"
        "    clock: {offset: -2.5s, synchronised: false}\n"
        "  gpu2: {devices: [{kind: gpu, index: 0, errors: [xid 48]}]}\n"
    )
    assert probe.devices() == (
        DeviceHealth("gpu", 0),
        DeviceHealth("gpu", 1, ("xid 79",)),
        DeviceHealth("gpu", 2),
    )
    assert probe.clock() == Clock("fault", False, -2.5)
    report = HealthReporter("gpu1", probe, time_source=lambda: 5000.0, with_counters=False).report()
    assert report.ts == 4997.5  # the injected offset shows in the time stamp, as a real one would
    assert report.clock.synchronised is False
    assert report.expected == {"gpu": 4}
    faults.write_text("")
    assert all(d.ok for d in probe.devices())


def test_npu_node_of_the_lab_counts_physical_cards() -> None:
    probe = InventoryHealth(LAB, "npu2")
    assert probe.kinds == ("npu",)
    assert probe.expected == {"npu": 4}  # cards 2 and 3 split into vNPUs are still cards


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: {gpu1: {devices: [{kind: tpu, index: 0}]}}", "kind: Must be one of: gpu, npu"),
        ("nodes: {gpu1: {devices: [{kind: gpu, index: 9}]}}", "gpu1 has no gpu 9"),
        ("nodes: {gpu1: {devices: [{kind: gpu}]}}", "devices[0].index: Missing data"),
        ("nodes: {gpu1: {clock: {offset: soon}}}", "clock.offset: not a duration"),
        ("nodes: {gpu1: {colour: red}}", "gpu1.colour: Unknown field"),
        ("nodes: [gpu1]", "nodes: Not a valid mapping type"),
        ("version: 2", "version: must be 1"),
        ('nodes: {gpu1: {probe_errors: ["two\\nlines"]}}', "probe_errors[0]: one line"),
        ("nodes: {gpu1: [", "not valid YAML"),
    ],
)
def test_bad_faults_file_fails_the_probe_loudly(tmp_path: Path, text: str, message: str) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(text)
    with pytest.raises(ProbeError, match="faults file") as err:
        InventoryHealth(LAB, "gpu1", faults).devices()
    assert message in str(err.value)


def test_injected_probe_error(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("nodes: {gpu1: {probe_errors: [NVML found GPUs but could not read them]}}")
    report = HealthReporter("gpu1", InventoryHealth(LAB, "gpu1", faults), with_counters=False)
    assert report.report().probe_errors == ("NVML found GPUs but could not read them",)


def test_node_not_in_inventory() -> None:
    with pytest.raises(ValueError, match="node 'gpu9' is not in the inventory"):
        InventoryHealth(LAB, "gpu9")


def test_a_card_without_xid_events_does_not_cost_the_others_theirs() -> None:
    class Partial(FakeNvml):
        def nvmlDeviceRegisterEvents(self, h: Card, kinds: int, es: str) -> None:
            if h.minor == 0:
                raise NotSupported

    nvml = Partial([Card(0, ecc=None), Card(1, ecc=None)])
    watcher = NvmlHealth(nvml, clock=lambda: 1.0)
    nvml.events.append((1, 94))
    assert watcher.devices() == (DeviceHealth("gpu", 0), DeviceHealth("gpu", 1, ("xid 94",)))


def test_watcher_without_a_driver_sees_no_gpus() -> None:
    class NoDriver(FakeNvml):
        def nvmlInit(self) -> None:
            raise NVMLError("Driver Not Loaded")

    watcher = NvmlHealth(NoDriver([Card(0)]))
    assert watcher.events is None
    assert watcher.devices() == ()
