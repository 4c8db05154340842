"""Running a vendor's SMI tool: the one place the probes spawn ``npu-smi``, ``cnmon``,
``hy-smi`` and ``xpu-smi``. A tool that is not installed means the host has none of its
devices; one that is installed but fails or hangs is a :class:`ProbeError`."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from gres.errors import ProbeError

SMI_TIMEOUT = 15.0


def run_smi(argv: Sequence[str], timeout: float = SMI_TIMEOUT) -> str | None:
    """The tool's standard output; None when the tool is not installed."""
    argv = list(argv)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired as exc:
        raise ProbeError(f"{' '.join(argv)} did not answer within {timeout:g} s") from exc
    except OSError as exc:
        raise ProbeError(f"cannot run {' '.join(argv)}: {exc}") from exc
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[:500]
        raise ProbeError(f"{' '.join(argv)} failed with exit code {proc.returncode}: {detail}")
    return proc.stdout
