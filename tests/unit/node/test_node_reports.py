"""Reports on disk, the reporter's counters and rates, the clock parsers on recorded chronyc
output, the agent command."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gres.device import DeviceHealth
from slurm_plugins.node import Clock, NodeReport, read_reports, write_report
from slurm_plugins.node.clock import parse_chronyc_tracking, parse_timedatectl
from slurm_plugins.node.health import HealthReporter, probe_clock

DATA = Path(__file__).resolve().parents[2] / "data" / "health"
LAB = Path(__file__).resolve().parents[3] / "gres" / "examples" / "lab.yaml"


def test_report_round_trip_and_read_back(tmp_path: Path) -> None:
    report = NodeReport(
        "gpu1",
        ts=1000.5,
        probed=("gpu",),
        devices=(DeviceHealth("gpu", 0), DeviceHealth("gpu", 1, ("xid 79",))),
        expected={"gpu": 2},
        clock=Clock("chrony", True, -0.002),
    )
    path = write_report(tmp_path, report)
    assert path.name == "gpu1.health.json"
    (tmp_path / "gpu1.jsonl").write_text('{"ts": 1, "job": 5, "util": 3.0, "node": "gpu1"}\n')
    (tmp_path / "gpu2.health.json").write_text("{not json")
    (tmp_path / "gpu3.health.json").write_bytes(report.to_json())  # a report under another name
    (tmp_path / "gpu4.health.json").write_text(json.dumps({"version": 1, "node": "gpu4"}))
    seen = read_reports(tmp_path)
    assert sorted(seen) == ["gpu1", "gpu2", "gpu3", "gpu4"]
    assert seen["gpu1"].report == report
    assert seen["gpu1"].mtime == pytest.approx(os.stat(path).st_mtime)
    assert seen["gpu2"].report is None
    assert "unreadable report gpu2.health.json" in seen["gpu2"].error
    assert seen["gpu3"].error == "gpu3.health.json reports node 'gpu1'"
    assert "missing required field `ts`" in seen["gpu4"].error
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written left behind


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"node": "n", "ts": 1, "version": 2}', "report version 2, not 1"),
        ('{"node": "n", "ts": "soon"}', "Expected `float`, got `str` - at `$.ts`"),
        (
            '{"node": "n", "ts": 1, "devices": [{"kind": "gpu", "index": true}]}',
            "Expected `int`, got `bool` - at `$.devices[0].index`",
        ),
        ('{"node": "n", "ts": 1, "clock": {"offset_s": [1]}}', "at `$.clock.offset_s`"),
        ("[1, 2]", "Expected `object`, got `array`"),
    ],
)
def test_bad_reports_say_what_and_where(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        NodeReport.from_json(text)


def test_reporter_counters_come_from_psutil() -> None:
    report = HealthReporter("cpu1", None, clock_probe=Clock).report()
    assert report.probed == ()
    assert report.net  # at least the loopback interface
    assert all(c.bytes_sent >= 0 and c.errin >= 0 for c in report.net.values())
    assert all(u.total >= u.used for u in report.fs.values())
    assert NodeReport.from_json(report.to_json()) == report


@pytest.mark.parametrize(
    ("name", "clock"),
    [
        ("chronyc-tracking-synced.txt", Clock("chrony", True, -0.000006523)),
        ("chronyc-tracking-fast.txt", Clock("chrony", True, 2.417003521)),
        ("chronyc-tracking-unsynced.txt", Clock("chrony", False, 0.0)),
    ],
)
def test_chronyc_tracking(name: str, clock: Clock) -> None:
    assert parse_chronyc_tracking((DATA / name).read_text()) == clock


def test_clock_parsers_refuse_what_they_do_not_know() -> None:
    with pytest.raises(ValueError, match="neither"):
        parse_chronyc_tracking("506 Cannot talk to daemon\n")
    assert parse_timedatectl("yes\n") == Clock("timedatectl", True, None)
    assert parse_timedatectl("no") == Clock("timedatectl", False, None)
    with pytest.raises(ValueError, match="not yes or no"):
        parse_timedatectl("Failed to connect to bus")


def test_probe_clock_falls_back_from_chrony_to_timedatectl_to_unknown() -> None:
    calls: list[list[str]] = []

    def run(answers: dict[str, tuple[int, str]]):  # type: ignore[no-untyped-def]
        def runner(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
            calls.append(argv)
            if argv[0] not in answers:
                return None  # not installed
            rc, out = answers[argv[0]]
            return subprocess.CompletedProcess(argv, rc, out, "")

        return runner

    fast = (DATA / "chronyc-tracking-fast.txt").read_text()
    assert probe_clock(run({"chronyc": (0, fast)})).offset_s == pytest.approx(2.417003521)
    assert calls == [["chronyc", "tracking"]]
    got = probe_clock(run({"chronyc": (1, ""), "timedatectl": (0, "no\n")}))
    assert got == Clock("timedatectl", False, None)
    assert calls[-1] == ["timedatectl", "show", "-p", "NTPSynchronized", "--value"]
    assert probe_clock(run({})) == Clock()


def test_agent_command_writes_samples_and_a_health_report(tmp_path: Path) -> None:
    from slurm_plugins.node.cli import agent

    faults = tmp_path / "faults.yaml"
    faults.write_text("nodes: {gpu2: {devices: [{kind: gpu, index: 2, errors: [xid 74]}]}}\n")
    (tmp_path / "util").mkdir()
    args = ["--source", f"file:{tmp_path / 'util'}", "--out", str(tmp_path / "out"), "--node"]
    lab = ["--inventory", str(LAB), "--faults", str(faults), "--once"]
    res = CliRunner().invoke(agent, [*args, "gpu2", *lab])
    assert res.exit_code == 0, res.output
    report = read_reports(tmp_path / "out")["gpu2"].report
    assert report is not None
    assert [d.errors for d in report.devices] == [(), (), ("xid 74",), ()]
    res = CliRunner().invoke(agent, [*args, "gpu3", "--no-health", "--once"])
    assert res.exit_code == 0
    assert not (tmp_path / "out" / "gpu3.health.json").exists()
    res = CliRunner().invoke(agent, [*args, "gpu9", *lab])
    assert res.exit_code == 2
    assert "node 'gpu9' is not in the inventory" in res.output


def test_rates_between_two_reports() -> None:
    from slurm_plugins.node.report import DiskCounters, NetCounters, Rates, rates

    a = NodeReport(
        "n",
        ts=100.0,
        net={"eth0": NetCounters(1000, 5000, errin=1), "ib0": NetCounters(10, 10)},
        disk={"nvme0n1": DiskCounters(0, 0, busy_ms=0)},
    )
    b = NodeReport(
        "n",
        ts=110.0,
        net={
            "eth0": NetCounters(3000, 45000, errin=3, dropin=2),
            "ib0": NetCounters(5, 5),  # counters went backwards: reset, left out
            "ib1": NetCounters(99, 99),  # new: no rate yet
        },
        disk={"nvme0n1": DiskCounters(10_000_000, 20_000_000, busy_ms=2500)},
    )
    assert rates(a, b) == {
        "net:eth0": Rates(in_bps=4000.0, out_bps=200.0, errors_ps=0.4),
        "disk:nvme0n1": Rates(in_bps=1_000_000.0, out_bps=2_000_000.0, busy=0.25),
    }
    assert rates(b, a) == {}  # time went backwards


def test_reporter_adds_rates_from_its_previous_report() -> None:
    t = [100.0]
    reporter = HealthReporter("cpu1", None, clock_probe=Clock, time_source=lambda: t[0])
    first = reporter.report()
    assert first.rates == {}
    t[0] = 102.0
    second = reporter.report()
    assert second.rates
    assert {k.split(":")[0] for k in second.rates} <= {"net", "disk"}
    assert not any(k.startswith("disk:loop") for k in second.rates)
    assert all(r.in_bps >= 0 and r.out_bps >= 0 for r in second.rates.values())
