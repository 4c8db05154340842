"""``aipool policy render``: writes the hook and its table, refuses bad policies."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from slurm_plugins.admission.cli import cli
from slurm_plugins.admission.render import HOOK_FILE, TABLE_FILE
from tests.unit.admission.luarun import parses


def invoke(*args: str, env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_render_installs_both_files_once(tmp_path: Path) -> None:
    first = invoke("render", "--out", str(tmp_path))
    assert first.exit_code == 0, first.output
    assert f"wrote {TABLE_FILE}, {HOOK_FILE}" in first.output
    assert parses(tmp_path / HOOK_FILE)
    assert parses(tmp_path / TABLE_FILE)
    again = invoke("render", "--out", str(tmp_path))
    assert "nothing (up to date)" in again.output


def test_out_defaults_to_the_directory_of_slurm_conf(tmp_path: Path) -> None:
    result = invoke("render", env={"SLURM_CONF": str(tmp_path / "slurm.conf")})
    assert result.exit_code == 0, result.output
    assert (tmp_path / HOOK_FILE).exists()
    missing = invoke("render", env={"SLURM_CONF": ""})
    assert missing.exit_code == 2
    assert "give --out DIR" in missing.output


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    result = invoke("render", "--out", str(tmp_path), "--dry-run")
    assert result.exit_code == 0
    assert f"would write: {TABLE_FILE}, {HOOK_FILE}" in result.output
    assert list(tmp_path.iterdir()) == []
    invoke("render", "--out", str(tmp_path))
    assert "up to date" in invoke("render", "--out", str(tmp_path), "--dry-run").output


def test_pass_through_warns(tmp_path: Path) -> None:
    result = invoke("render", "--out", str(tmp_path), "--pass-through")
    assert result.exit_code == 0
    assert "admits every job unchecked" in result.output
    assert '["pass_through"] = true' in (tmp_path / TABLE_FILE).read_text()


def test_a_bad_policy_exits_2_naming_each_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\ncluster: {default_partition: gpu}\n"
        "pools: {gpu: {kind: tpu, partitions: [gpu]}}\n"
        "tenants: {nlp: {domain: research, limits: {time: soon}}}\n"
    )
    result = invoke("render", "--config", str(bad), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "error: pools.gpu.kind: Must be one of: gpu, npu, cpu, accel." in result.output
    assert "error: tenants.nlp.limits.time: must be a Slurm time" in result.output
    assert not (tmp_path / "out").exists()


def test_the_group_is_extensible() -> None:
    assert isinstance(cli, click.Group)
    assert cli.name == "policy"

    @cli.command("probe-extension")
    def _extra() -> None:
        click.echo("extra")

    try:
        assert invoke("probe-extension").output == "extra\n"
    finally:
        cli.commands.pop("probe-extension")


def test_help() -> None:
    assert "render" in invoke("--help").output


def test_profile_goes_into_the_table(tmp_path: Path) -> None:
    assert invoke("render", "--out", str(tmp_path), "--profile", "50").exit_code == 0
    assert '["profile"] = 50' in (tmp_path / TABLE_FILE).read_text()
    assert invoke("render", "--out", str(tmp_path), "--profile", "0").exit_code == 2
