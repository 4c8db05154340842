"""Golden files: the sbatch argv and script of every example spec, one per topology.

Regenerate after an intended change with ``AIPOOL_UPDATE_GOLDEN=1 pytest tests/unit/jobspec``
and review the diff.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jobspec.files import load_spec_file
from jobspec.submit import plan
from tests.unit.jobspec.conftest import DATA

SPECS = sorted((DATA / "specs").glob("*.yaml"))
GOLDEN = DATA / "golden"
UPDATE = os.environ.get("AIPOOL_UPDATE_GOLDEN") == "1"


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with AIPOOL_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{path} differs (AIPOOL_UPDATE_GOLDEN=1)"


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_golden(spec_file: Path) -> None:
    rendered = plan(load_spec_file(spec_file))
    for spec, out in rendered:
        stem = spec_file.stem if len(rendered) == 1 else f"{spec_file.stem}.{spec.name}"
        _check(GOLDEN / f"{stem}.argv", "\n".join(out.argv) + "\n")
        _check(GOLDEN / f"{stem}.sh", out.script)
        done = subprocess.run(
            ["bash", "-n"], input=out.script, text=True, capture_output=True, check=False
        )
        assert done.returncode == 0, done.stderr


def test_every_topology_has_an_example() -> None:
    from jobspec.model import TopologyKind

    kinds = {s.topology.kind for p in SPECS for s in load_spec_file(p)}
    assert kinds == set(TopologyKind)
    assert any(s.jupyter for p in SPECS for s in load_spec_file(p))
