"""What every hub preset program needs from its job: the card Slurm granted it, and its base
weights in the offline mirror."""

from __future__ import annotations

import os
import re
from pathlib import Path

#: a hub repository name, ``owner/name``: a version's ``base`` may not point elsewhere
REPO = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def device() -> str:
    """The card Slurm gave the job: CUDA when it set ``CUDA_VISIBLE_DEVICES`` (gpu and shard
    requests), an Ascend NPU when the TaskProlog set ``ASCEND_RT_VISIBLE_DEVICES`` and
    ``torch_npu`` is installed; else the CPU, so that a CPU job on a GPU node leaves the
    node's cards to the jobs they were given to (the lab's fake GPUs set the variable
    without a CUDA device)."""
    import torch

    if os.environ.get("CUDA_VISIBLE_DEVICES") and torch.cuda.is_available():
        return "cuda"
    if os.environ.get("ASCEND_RT_VISIBLE_DEVICES"):
        try:
            import torch_npu  # noqa: F401  -- registers torch.npu
        except ImportError:
            return "cpu"
        if torch.npu.is_available():  # type: ignore[attr-defined]
            return "npu"
    return "cpu"


def hub_weights(mirror: Path | None, repo: str, preset: str, marker: str = "config.json") -> Path:
    """``<mirror>/<repo>``, which must hold ``marker``; a missing repository names the command
    that fills it."""
    if not REPO.fullmatch(repo) or ".." in repo:
        raise ValueError(f"base: {repo!r} is not a hub repository name (owner/name)")
    fill = f"aipool models mirror fill {preset}"
    if mirror is None:
        raise FileNotFoundError(f"the offline mirror directory is not set (--mirror); {fill}")
    path = mirror / repo
    if not (path / marker).is_file():
        raise FileNotFoundError(f"{repo} is not in the offline mirror {mirror}: run `{fill}`")
    return path
