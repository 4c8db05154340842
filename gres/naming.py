"""Names, defaults and device file conventions shared by the inventory, its loader and dumper.

Kept apart from the dataclasses so the YAML loader and dumper can use them without importing
each other.
"""

from __future__ import annotations

import posixpath
import re

DEFAULT_SHARDS_PER_GPU = 32
DEFAULT_DEVICE_DIR = "/dev"
#: vNPU ids are allocated from here when an inventory does not give them.
VNPU_ID_BASE = 100

#: Slurm node names we accept: a letter first, then letters, digits, ``_`` or ``-``. Dots,
#: brackets, commas and ``=`` would be read as hostlist or key syntax by Slurm.
NODE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
#: Names Slurm reserves in NodeName= / Nodes= contexts.
RESERVED_NODE_NAMES = frozenset({"default", "all"})
#: GRES type names: lower case, so ``--gres=gpu:a100`` and the config can never disagree on case.
GRES_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
#: Node features: simple tokens; ``&|*()[]!,`` and spaces mean something in ``--constraint``.
FEATURE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
#: Device paths end up in gres.conf unquoted; keep them to a safe alphabet.
DEVICE_PATH_RE = re.compile(r"^/[A-Za-z0-9_./-]*[A-Za-z0-9_-]$")


def gpu_device(device_dir: str, index: int) -> str:
    """``/dev/nvidia<minor>``: the NVIDIA driver's device file of GPU ``index``."""
    return posixpath.join(device_dir, f"nvidia{index}")


def npu_device(device_dir: str, index: int) -> str:
    """``/dev/davinci<phy id>``: the Ascend driver's device file of a physical NPU."""
    return posixpath.join(device_dir, f"davinci{index}")


def vnpu_device(device_dir: str, vnpu_id: int) -> str:
    """``/dev/vdavinci<vnpu id>``: the device file the Ascend driver creates for a vNPU."""
    return posixpath.join(device_dir, f"vdavinci{vnpu_id}")


def reroot(device: str, device_dir: str) -> str:
    """The same device file name under another directory."""
    return posixpath.join(device_dir, posixpath.basename(device))
