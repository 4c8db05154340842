"""The ``gres`` click group: probe and render, and how bad input is reported."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gres.cli import cli
from gres.inventory import load_inventory
from gres.render import render_all

REPO = Path(__file__).resolve().parents[3]
LAB = REPO / "gres" / "examples" / "lab.yaml"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_probe_prints_a_loadable_inventory(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["probe", "--name", "probe1"])
    assert result.exit_code == 0, result.output
    inv = load_inventory(result.stdout)
    assert inv.names == ("probe1",)
    assert inv.nodes[0].cpus >= 1


def test_probe_json(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["probe", "--name", "probe1", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["nodes"][0]["name"] == "probe1"
    assert load_inventory(result.stdout).names == ("probe1",)


def test_probe_with_an_invalid_name(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["probe", "--name", "no good"])
    assert result.exit_code == 1
    assert "not a valid Slurm node name" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("part", ["gres.conf", "nodes.conf", "taskprolog.sh"])
def test_render_one_part_to_stdout(runner: CliRunner, part: str) -> None:
    result = runner.invoke(cli, ["render", "--inventory", str(LAB), "--part", part])
    assert result.exit_code == 0, result.output
    assert result.stdout == render_all(load_inventory(LAB))[part]


def test_render_settings_part(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["render", "--inventory", str(LAB), "--part", "gres-settings.conf"])
    assert result.exit_code == 0, result.output
    assert "GresTypes=gpu,npu,shard\n" in result.stdout
    assert (
        "AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/shard,gres/npu,gres/npu:910b,"
        "gres/npu:910b_vir05,gres/npu:910b_vir10\n"
    ) in result.stdout


def test_render_all_to_stdout(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["render", "--inventory", str(LAB)])
    assert result.exit_code == 0, result.output
    headers = [line for line in result.stdout.splitlines() if line.startswith("==> ")]
    assert headers == [
        "==> gres.conf <==",
        "==> nodes.conf <==",
        "==> taskprolog.sh <==",
        "==> gres-settings.conf <==",
        "==> topology.conf <==",
    ]


def test_render_into_a_directory(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "etc"
    args = ["render", "--inventory", str(LAB), "--out", str(out), "--device-dir", "/tmp/x"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    expected = render_all(load_inventory(LAB).with_device_dir("/tmp/x"))
    for name in ("gres.conf", "nodes.conf", "taskprolog.sh"):
        assert (out / name).read_text() == expected[name]
    assert "File=/tmp/x/nvidia[0-3]" in (out / "gres.conf").read_text()
    assert (out / "taskprolog.sh").stat().st_mode & stat.S_IXUSR
    assert not (out / "gres.conf").stat().st_mode & stat.S_IXUSR
    assert sorted(p.name for p in out.iterdir()) == [
        "gres-settings.conf",
        "gres.conf",
        "nodes.conf",
        "taskprolog.sh",
        "topology.conf",
    ]
    again = runner.invoke(cli, args)
    assert again.exit_code == 0
    assert (out / "gres.conf").read_text() == expected["gres.conf"]


def test_render_with_extra_node_settings(runner: CliRunner, tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("gpu1: {NodeAddr: 127.0.0.1, Port: 17001}\n")
    result = runner.invoke(
        cli, ["render", "--inventory", str(LAB), "--part", "nodes.conf", "--extra", str(extra)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("NodeName=gpu1 NodeAddr=127.0.0.1 Port=17001 CPUs=16 ")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("gpux: {Port: 1}\n", "not in the inventory"),
        ("- a\n", "must be a mapping"),
        ("gpu1: {Port: [1]}\n", "plain values"),
        ("gpu1: {CPUs: 4}\n", "rendered from the inventory"),
    ],
)
def test_render_rejects_bad_extra(
    runner: CliRunner, tmp_path: Path, content: str, message: str
) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(content)
    result = runner.invoke(cli, ["render", "--inventory", str(LAB), "--extra", str(extra)])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_bad_inventory_exits_2_with_field_paths(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "nodes:\n  - {name: a, cpus: 1, memory_mb: 1}\n"
        "  - {name: b, cpus: 1, memory_mb: 1, gpus: [{model: a100, count: 0}]}\n"
    )
    result = runner.invoke(cli, ["render", "--inventory", str(bad)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"error: {bad}: nodes[1].gpus[0].count: must be at least 1" in result.stderr
    assert "Traceback" not in result.output


def test_missing_inventory_and_bad_device_dir(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["render", "--inventory", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "cannot read inventory" in result.stderr
    result = runner.invoke(cli, ["render", "--inventory", str(LAB), "--device-dir", "dev"])
    assert result.exit_code == 2
    assert "absolute" in result.stderr


def test_unwritable_output_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = runner.invoke(cli, ["render", "--inventory", str(LAB), "--out", str(blocker / "x")])
    assert result.exit_code == 1
    assert "cannot write" in result.stderr


def test_python_dash_m_gres() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gres", "render", "--inventory", str(LAB), "--part", "gres.conf"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "AutoDetect=off" in proc.stdout
