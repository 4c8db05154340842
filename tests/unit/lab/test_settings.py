"""The lab's settings reach the packages' ``--lab`` options through the ``aipool`` command
(click's context), so no product package imports the lab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from accounting.edge import LAB_SLURM_ENV, slurm_client
from aipool.cli import main
from aipool.lab.config import LabConfig
from portal.cli import lab_settings
from slurm_plugins.client import SlurmClient


def test_the_aipool_command_passes_the_labs_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIPOOL_LAB_DIR", str(tmp_path))
    cfg = LabConfig.from_env()
    seen: dict[str, Any] = {}

    @click.command("probe")
    @click.pass_context
    def probe(ctx: click.Context) -> None:
        seen["portal"] = lab_settings()
        seen["slurm_env"] = ctx.meta[LAB_SLURM_ENV]()
        seen["client"] = slurm_client(True)

    main.add_command(probe)
    try:
        res = CliRunner().invoke(main, ["probe"])
    finally:
        main.commands.pop("probe")
    assert res.exit_code == 0, res.output
    assert seen["slurm_env"] == {"SLURM_CONF": str(cfg.slurm_conf), "SLURM_UMASK": "0077"}
    assert seen["portal"]["SLURM_ENV"] == seen["slurm_env"]
    assert seen["portal"]["PORTAL_HOME"] == str(tmp_path / "portal")
    assert seen["portal"]["SLURM_REST_URL"] == cfg.rest_url
    assert isinstance(seen["client"], SlurmClient)


def test_without_the_aipool_command_lab_is_a_usage_error() -> None:
    @click.command()
    def alone() -> None:
        lab_settings()

    res = CliRunner().invoke(alone, [])
    assert res.exit_code == 2
    assert "--lab works through the aipool command" in res.output
