"""``promtool`` (Debian's ``prometheus`` package) as the tests call it: skipped with the reason
where it is missing (``--no-skips`` turns that into a failure; scripts/bootstrap.sh installs
it), and every check's output in the failure message."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

MISSING = "promtool is not installed: scripts/bootstrap.sh installs Debian's prometheus package"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip(MISSING)
    return found


def check(*args: str, stdin: str | None = None) -> str:
    """``promtool check <args>``; fails the test with promtool's own words when it objects."""
    argv = [promtool(), "check", *args]
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{out}"
    return out


def check_config(path: Path, *, syntax_only: bool = False) -> str:
    """``promtool check config``; ``syntax_only`` leaves out the files it names (rules, the
    token), for an example whose files live on another machine."""
    return check("config", *(["--syntax-only"] if syntax_only else []), str(path))


def check_metrics(text: str) -> None:
    """promtool's linter on an exposition: it parses, and names, types and units follow
    Prometheus's conventions (``_total`` counters, base units, no type in a name …)."""
    assert "# TYPE aipool_" in text, text[:500]
    out = check("metrics", stdin=text)
    assert not out.strip(), out  # promtool names every problem it finds
