"""The checker's state file, the health section of the daemon's configuration and the
commands' input checks and output."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gres.device import DeviceHealth
from plumbing.errors import ConfigError
from slurm_plugins.health.checker import HealthStore
from slurm_plugins.health.plan import HealthState, NodeRecord
from slurm_plugins.node import Clock, NodeReport, write_report
from slurm_plugins.policy.config import parse_config


def test_state_store_is_atomic_and_survives_damage(tmp_path: Path) -> None:
    store = HealthStore(tmp_path)
    assert store.load() == HealthState()
    state = HealthState({"gpu1": NodeRecord(1, "device_error", 5.0)})
    store.save(state)
    assert store.load() == state
    assert [p.name for p in tmp_path.iterdir()] == ["health.json"]
    store.path.write_text('{"nodes": {"gpu1": {"streak": "x"}}}')
    assert store.load() == HealthState()


def test_health_section_of_the_daemon_config(tmp_path: Path) -> None:
    base = {"policies": [{"name": "fifo"}], "samples": {"dir": "/shared/samples"}}
    assert parse_config(base).health is None
    cfg = parse_config({**base, "health": {"max_clock_skew": "500ms" if False else 0.5}})
    assert cfg.health is not None
    assert cfg.health.reports == Path("/shared/samples")
    assert cfg.health.max_clock_skew_s == 0.5
    with pytest.raises(ConfigError) as err:
        parse_config(
            {**base, "health": {"recover_after": 0, "interval": "soon", "max_drained": 2, "x": 1}}
        )
    text = "\n".join(err.value.messages)
    assert "health.recover_after:" in text
    assert "health.interval: not a duration: 'soon'" in text
    assert "health.x: Unknown field." in text
    assert "health.max_drained: Must be greater than or equal to 0" in text


def test_check_command_needs_a_health_section(tmp_path: Path) -> None:
    from slurm_plugins.health.cli import cli

    conf = tmp_path / "daemon.yaml"
    conf.write_text("policies: [{name: fifo}]\n")
    res = CliRunner().invoke(cli, ["check", "--config", str(conf)])
    assert res.exit_code == 2
    assert "no health: section" in res.output
    conf.write_text("policies: [{name: fifo}]\nhealth: {drain: maybe}\n")
    res = CliRunner().invoke(cli, ["check", "--config", str(conf)])
    assert res.exit_code == 2
    assert "health.drain: Not a valid boolean." in res.output


def test_show_command(tmp_path: Path) -> None:
    from slurm_plugins.health.cli import cli
    from slurm_plugins.node.report import DiskCounters, Rates

    write_report(
        tmp_path / "reports",
        NodeReport(
            "gpu1",
            ts=1.0,
            devices=(DeviceHealth("gpu", 0), DeviceHealth("gpu", 1, ("xid 79",))),
            clock=Clock("chrony", True, 0.0042),
            disk={"nvme0n1": DiskCounters()},
            rates={"net:ib0": Rates(2.5e9, 1e9, 0.0), "disk:nvme0n1": Rates(3e6, 0, 0, 0.5)},
        ),
    )
    conf = tmp_path / "daemon.yaml"
    conf.write_text(f"policies: [{{name: fifo}}]\nhealth: {{reports: {tmp_path / 'reports'}}}\n")
    res = CliRunner().invoke(cli, ["show", "--config", str(conf)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "clock +0.004 s (chrony, synchronised); 2 device(s), 1 with errors" in lines[0]
    assert lines[1:] == [
        "  gpu 1: xid 79",
        "  nvme0n1: read 3.0 MB/s, write 0.0 MB/s, busy 50%",
        "  ib0: in 2500.0 MB/s, out 1000.0 MB/s, 0.0 errors+drops/s",
    ]
    res = CliRunner().invoke(cli, ["show", "--config", str(conf), "--node", "gpu2"])
    assert res.exit_code == 1
    assert "no report from gpu2" in res.output
