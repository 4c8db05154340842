"""Shared test options: ``--slurm`` runs the integration tests against the lab cluster."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slurm",
        action="store_true",
        help="run integration tests against the running lab cluster (`aipool lab up`)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slurm"):
        return
    skip = pytest.mark.skip(reason="needs the lab cluster: run with --slurm")
    for item in items:
        if "slurm" in item.keywords:
            item.add_marker(skip)
