"""``aipool power``: the energy report and the render for a site, and clear refusals."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from slurm_plugins.power.cli import cli
from slurm_plugins.power.plan import Event, EventKind
from slurm_plugins.power.program import append_events


def config(tmp_path: Path, **over: object) -> Path:
    path = tmp_path / "power.yaml"
    data = {
        "nodes": "egpu[1-2]",
        "driver": {"kind": "command", "resume": ["on", "{node}"], "suspend": ["off", "{node}"]},
        "events": str(tmp_path / "events.jsonl"),
        "idle_watts": 400,
        "partitions": {"gpu": {"floor": 1}},
        **over,
    }
    path.write_text(yaml.safe_dump(data))
    return path


def test_energy_in_json(tmp_path: Path) -> None:
    path = config(tmp_path)
    append_events(
        tmp_path / "events.jsonl", [Event(time.time() - 7200, "egpu1", EventKind.SUSPEND)]
    )
    out = CliRunner().invoke(cli, ["energy", "--config", str(path), "--json"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)
    assert row["node"] == "egpu1"
    assert abs(row["kwh"] - 0.8) < 0.01


def test_render_writes_the_scripts_and_prints_the_lines(tmp_path: Path) -> None:
    path = config(tmp_path)
    progs = tmp_path / "progs"
    args = ["render", "--config", str(path), "--programs-dir", str(progs), "--write"]
    out = CliRunner().invoke(cli, [*args, "--partition", "gpu=gpu1,egpu[1-2]"])
    assert out.exit_code == 0, out.output
    assert "SuspendExcNodes=egpu1,egpu2:1,gpu1\n" in out.output
    script = (progs / "power-resume.sh").read_text()
    assert f"power resume --config {path}" in script
    assert (progs / "power-suspend.sh").stat().st_mode & 0o111


def test_bad_configuration_and_hostlist_exit_2(tmp_path: Path) -> None:
    bad = config(tmp_path, resume_rate=-1)
    out = CliRunner().invoke(cli, ["energy", "--config", str(bad)])
    assert out.exit_code == 2
    assert "resume_rate" in out.output
    good = config(tmp_path)
    args = ["render", "--config", str(good), "--programs-dir", str(tmp_path), "--partition", "x"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 2
    assert "expected NAME=HOSTLIST" in out.output
