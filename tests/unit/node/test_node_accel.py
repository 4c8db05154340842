"""The node agent on MLU, DCU and XPU hosts: samples per job through each runtime's visibility
variable and health, from one reading of a stand-in tool that prints recorded output."""

from __future__ import annotations

from pathlib import Path

import pytest

from gres.accel import accel_health, probe_accels
from gres.errors import ProbeError
from slurm_plugins.node.health import AccelSmiHealth, health_reporter
from slurm_plugins.node.sources import AccelSmi, AccelSmiSource, source
from tests.unit.node.test_node_agent import fake_proc

DATA = Path(__file__).parents[2] / "data"
SAMPLES = {
    "mlu": DATA / "cnmon" / "mlu370-x4.txt",
    "dcu": DATA / "hy-smi" / "k100-ai.json",
    "xpu": DATA / "xpu-smi" / "p800-query.txt",
}


def stand_in(tmp_path: Path, name: str, output: Path, *, rc: int = 0) -> tuple[str, ...]:
    """A tool that prints ``output`` whatever its arguments and counts its runs."""
    tool = tmp_path / name
    tool.write_text(f"#!/bin/sh\necho run >> {tmp_path / 'runs'}\ncat {output}\nexit {rc}\n")
    tool.chmod(0o755)
    return (str(tool),)


def test_probe_lists_each_kinds_cards_with_their_device_files(tmp_path: Path) -> None:
    argvs = {k: stand_in(tmp_path, k, p) for k, p in SAMPLES.items()}
    cards = probe_accels(argvs, device_dir="/dev")
    assert [(a.kind, a.index, a.model, a.device) for a in cards] == [
        ("mlu", 0, "mlu370", "/dev/cambricon_dev0"),
        ("mlu", 1, "mlu370", "/dev/cambricon_dev1"),
        ("dcu", 0, "k100_ai", "/dev/dri/renderD128"),
        ("dcu", 1, "k100_ai", "/dev/dri/renderD129"),
        ("xpu", 0, "p800", "/dev/xpu0"),
    ]
    absent = {k: (str(tmp_path / "absent"),) for k in SAMPLES}
    assert probe_accels(absent) == ()


def test_probe_refuses_output_it_cannot_read(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("Segmentation fault\n")
    with pytest.raises(ProbeError, match="no 'Card <n>' block"):
        probe_accels({"mlu": stand_in(tmp_path, "cnmon", garbage)})


@pytest.mark.parametrize(
    ("kind", "variable", "busy"),
    [("mlu", "MLU_VISIBLE_DEVICES", 66.0), ("dcu", "HIP_VISIBLE_DEVICES", 0.0)],
)
def test_source_and_health_share_one_reading(
    tmp_path: Path, kind: str, variable: str, busy: float
) -> None:
    reading = AccelSmi(kind, stand_in(tmp_path, kind, SAMPLES[kind]), clock=lambda: 0.0)
    fake_proc(tmp_path / "proc", 7, {"SLURM_JOB_ID": "9", variable: "0"})
    assert AccelSmiSource(reading, proc=tmp_path / "proc").sample() == {9: busy}
    assert [d.index for d in AccelSmiHealth(reading).devices()] == [0, 1]
    assert (tmp_path / "runs").read_text().count("run") == 1


def test_sources_and_reporters_by_tool_name() -> None:
    assert isinstance(source("cnmon"), AccelSmiSource)
    assert isinstance(source("xpu-smi"), AccelSmiSource)
    assert health_reporter("hy-smi", "dcu1").probe is not None


def test_health_words_and_ecc_errors() -> None:
    text = (
        SAMPLES["mlu"].read_text().replace("Device                     : Good", "Device : Fault", 1)
    )
    first, second = accel_health("mlu", text)
    assert (first.ok, first.errors, second.ok) == (False, ("health Fault",), True)
    xpu = SAMPLES["xpu"].read_text()
    assert accel_health("xpu", xpu)[0].ok
    broken = xpu.replace(
        "DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2", 1
    )
    (card,) = accel_health("xpu", broken)
    assert (card.ok, card.ecc_uncorrected) == (False, 2)


def test_a_failing_tool_is_no_samples_and_a_health_probe_error(tmp_path: Path) -> None:
    reading = AccelSmi("xpu", stand_in(tmp_path, "xpu-smi", SAMPLES["xpu"], rc=4))
    fake_proc(tmp_path / "proc", 7, {"SLURM_JOB_ID": "9", "XPU_VISIBLE_DEVICES": "0"})
    assert AccelSmiSource(reading, proc=tmp_path / "proc").sample() == {}
    with pytest.raises(ProbeError, match="exit code 4"):
        AccelSmiHealth(reading).devices()
