"""Shared builders for the simulator tests: the small trace under ``tests/data/sim``."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.trace import NodeSpec, Task, load_nodes, load_tasks

DATA = Path(__file__).resolve().parents[2] / "data" / "sim"


@pytest.fixture(scope="session")
def nodes() -> list[NodeSpec]:
    return load_nodes(DATA / "nodes.csv")


@pytest.fixture(scope="session")
def tasks() -> list[Task]:
    return load_tasks(DATA / "pods.csv")
