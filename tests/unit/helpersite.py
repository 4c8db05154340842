"""The root helper installed as a site installs it, for tests that run as root: its copy and
configuration in a directory of their own, and the as-the-user agent's copy in a directory
every user may reach (a test's own tmp_path lies in root's private directory)."""

from __future__ import annotations

import json
import pwd
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import aipool.roothelper as helper
from asuser import agent


@dataclass(frozen=True)
class HelperSite:
    script: Path  # the helper's copy
    conf: Path  # its configuration beside it
    audit: Path
    reachable: Path  # a root-owned 0711 directory under /tmp, the agent's root

    @property
    def argv(self) -> list[str]:
        """The helper's command for ``ROOT_HELPER`` (the test is root: no sudo)."""
        return [sys.executable, "-I", str(self.script)]

    def audited(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.audit.read_text().splitlines()]


def someone() -> str:
    """An ordinary account this machine has: the demo's alice, else nobody."""
    for name in ("alice", "nobody"):
        try:
            if pwd.getpwnam(name).pw_uid >= 1000:
                return name
        except KeyError:
            continue
    pytest.fail("this machine has neither alice nor nobody")


@contextmanager
def installed(base: Path, roots: list[Path], group: str) -> Iterator[HelperSite]:
    sbin, audit = base / "sbin", base / "audit.log"
    sbin.mkdir()
    script = sbin / "aipool-helper"
    shutil.copy(helper.__file__, script)
    script.chmod(0o755)
    reachable = Path(tempfile.mkdtemp(prefix="aipool-agent-", dir="/tmp"))
    reachable.chmod(0o711)
    agent_copy = reachable / "agent.py"  # standard library only, as the module runs
    shutil.copy(agent.__file__, agent_copy)
    agent_copy.chmod(0o644)
    conf = sbin / "aipool-helper.json"
    conf.write_text(
        json.dumps(
            {
                "roots": [str(r) for r in roots],
                "group": group,
                "audit": str(audit),
                "agent": ["/usr/bin/python3", "-I", str(agent_copy)],
                "agent_roots": [str(reachable)],
            }
        )
    )
    conf.chmod(0o644)
    try:
        yield HelperSite(script, conf, audit, reachable)
    finally:
        shutil.rmtree(reachable, ignore_errors=True)
