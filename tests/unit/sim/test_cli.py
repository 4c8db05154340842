"""``aipool sim fgd`` on the small test trace."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sim.cli import cli
from tests.unit.sim.conftest import DATA

ARGS = ["fgd", "--nodes", str(DATA / "nodes.csv"), "--pods", str(DATA / "pods.csv")]


def test_fgd_json_has_the_mean_at_100_and_130_per_policy(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            *ARGS,
            "--policy",
            "best-fit",
            "--policy",
            "aipool",
            "--seeds",
            "42-43",
            "--jobs",
            "1",
            "--grid",
            "raw",
            "--grid",
            "shards",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["seeds"] == [42, 43]
    raw = data["summary"]["raw, cards by policy"]
    assert set(raw) == {"best-fit", "aipool"}
    assert {"alloc_100", "alloc_130", "vs_best-fit_130"} <= set(raw["aipool"])
    assert "k/32, cards by policy" in data["summary"]
    assert {p.name for p in out.iterdir()} == {"summary.json", "runs.csv", "curves.png"}
    assert len((out / "runs.csv").read_text().splitlines()) == 1 + 2 * 2 * 2


def test_fgd_table_by_default() -> None:
    result = CliRunner().invoke(cli, [*ARGS, "--policy", "fgd", "--seeds", "42", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "| fgd | raw, cards by policy |" in result.output
    assert "1 runs in" in result.output


def test_fgd_reports_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("sn,cpu_milli\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["fgd", "--nodes", str(bad), "--pods", str(bad)])
    assert result.exit_code != 0
    assert "missing column(s)" in result.output
    result = CliRunner().invoke(cli, [*ARGS, "--seeds", "9-1"])
    assert "runs backwards" in result.output
