"""Device inventory: the data classes of what each Slurm node has, and loading them from YAML.

The classes (:class:`Gpu`, :class:`Npu`, :class:`Vnpu`, :class:`NodeInventory`,
:class:`Inventory`) are defined in :mod:`gres.model`; the YAML format is described in
docs/gres.md and checked by :mod:`gres.loader`. This is the module the rest of AIPool imports.
"""

from __future__ import annotations

import os
from pathlib import Path

from gres.errors import InventoryError
from gres.loader import load_file, load_text
from gres.model import (
    TEMPLATES,
    Accel,
    Gpu,
    Inventory,
    NodeInventory,
    Npu,
    Vnpu,
    VnpuTemplate,
)
from gres.naming import DEFAULT_DEVICE_DIR, DEFAULT_SHARDS_PER_GPU, VNPU_ID_BASE

__all__ = [
    "DEFAULT_DEVICE_DIR",
    "DEFAULT_SHARDS_PER_GPU",
    "TEMPLATES",
    "VNPU_ID_BASE",
    "Accel",
    "Gpu",
    "Inventory",
    "InventoryError",
    "NodeInventory",
    "Npu",
    "Vnpu",
    "VnpuTemplate",
    "load_inventory",
]


def load_inventory(source: str | os.PathLike[str]) -> Inventory:
    """Load and validate an inventory from YAML text or from a file.

    A :class:`os.PathLike` is always a file. A ``str`` is YAML text when it spans several lines
    or contains ``": "`` / ``{``, otherwise a file name. Every problem raises
    :class:`gres.errors.InventoryError` naming the field path.
    """
    if isinstance(source, os.PathLike):
        return load_file(Path(source))
    if "\n" in source or ": " in source or source.lstrip().startswith("{"):
        return load_text(source)
    return load_file(Path(source))
