"""Shared helpers for the gres unit tests: example inventories and golden files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gres.inventory import Inventory, load_inventory

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def example() -> Callable[[str], Inventory]:
    """Load one of the shipped example inventories by name (``lab``, ``gpu-pool`` …)."""

    def load(name: str) -> Inventory:
        return load_inventory(REPO / "gres" / "examples" / f"{name}.yaml")

    return load


@pytest.fixture
def golden() -> Callable[[Path, str], None]:
    """Compare text with a golden file; ``AIPOOL_UPDATE_GOLDEN=1`` rewrites the file instead."""

    def check(path: Path, actual: str) -> None:
        if os.environ.get("AIPOOL_UPDATE_GOLDEN") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            return
        assert path.exists(), f"missing golden file {path}; run with AIPOOL_UPDATE_GOLDEN=1"
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"{path} differs; run with AIPOOL_UPDATE_GOLDEN=1 to update"

    return check
