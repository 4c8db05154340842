"""Example inventories: ``lab.yaml`` (the lab cluster), ``teaching-lab.yaml``, ``gpu-pool.yaml``.

A package of its own because package data is installed per package: this way the YAML files
travel with an installed ``gres`` and ``example_path`` finds them there too.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent


def example_path(name: str) -> Path:
    """Path of a shipped example inventory, by name with or without ``.yaml``."""
    path = EXAMPLES_DIR / (name if name.endswith(".yaml") else f"{name}.yaml")
    if path.parent != EXAMPLES_DIR or not path.is_file():
        known = ", ".join(sorted(p.stem for p in EXAMPLES_DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no example inventory {name!r} (known: {known})")
    return path
