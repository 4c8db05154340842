"""Lab pre-flight checks and the demo tenants file: clear errors, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from aipool.lab import preflight
from aipool.lab.config import DEFAULT_TENANTS
from aipool.lab.daemons import LabError
from aipool.lab.tenants import load_tenants


def test_missing_packages_are_named_with_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(LabError) as info:
        preflight.check(euid=0, path=str(tmp_path))
    msg = str(info.value)
    assert "slurmctld (slurmctld)" in msg
    assert "mariadbd (mariadb-server)" in msg
    assert "apt-get install -y" in msg
    assert "slurm-client" in msg.splitlines()[-1]


def test_only_the_missing_ones_are_named(tmp_path: Path) -> None:
    for name in preflight.REQUIRED:
        if name != "slurmrestd":
            exe = tmp_path / name
            exe.write_text("#!/bin/sh\n")
            exe.chmod(0o755)
    with pytest.raises(LabError) as info:
        preflight.check(euid=0, path=str(tmp_path))
    assert str(info.value).splitlines()[-1] == (
        "install with: apt-get update && apt-get install -y slurmrestd"
    )


def test_needs_root() -> None:
    with pytest.raises(LabError, match="as root"):
        preflight.check(euid=1000)


def test_demo_tenants_load() -> None:
    t = load_tenants(DEFAULT_TENANTS)
    assert {q.name for q in t.qos} == {"low", "normal", "high"}
    assert "alice" in t.unix_users
    assert next(a for a in t.accounts if a.name == "nlp").parent == "research"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("users: [{name: Alice, account: nlp}]", "users[0].name: must be a lower-case"),
        ("users: [{name: eve}]", "users[0].account: Missing data"),
        ("accounts: [{name: a, parent: nowhere}]", "accounts[0].parent: unknown account"),
        ("users: [{name: eve, account: ghost}]", "users[0].account: unknown account 'ghost'"),
        ("qos: [{name: high, colour: red}]", "qos[0].colour: Unknown field"),
        ("qos: [{name: high", "not valid YAML"),
    ],
)
def test_bad_tenants_name_the_field(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "tenants.yaml"
    path.write_text(text)
    with pytest.raises(LabError) as info:
        load_tenants(path)
    assert error in str(info.value)
