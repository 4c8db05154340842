"""Switching nodes on and off: one driver per site, chosen by the configuration's ``kind``.

- ``command``: an argv template per node (``{node}`` replaced), run without a shell;
- ``ipmi``: ``ipmitool chassis power on|off`` against the node's BMC, the password read by
  ipmitool from a file only the service user may read (``-f``), never on the command line;
- ``cloud``: a generic HTTP API, ``POST <url>/nodes/<node>/start|stop`` with a bearer token;
- ``lab``: the lab's privileged starter (``sudo -n <helper> start|stop <node>``), which
  starts or stops the node's ``slurmd`` as root, as only root may.

Each call returns an :class:`Outcome` (never raises for a node that fails), so one bad node
does not keep the others from coming up.
"""

from __future__ import annotations

import re
import stat
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx

from slurm_plugins.power.config import NODE_PLACEHOLDER, DriverConfig, DriverKind

# Slurm node names as they may appear in an argv or a URL path
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DETAIL_CHARS = 300


@dataclass(frozen=True, slots=True)
class Outcome:
    node: str
    ok: bool
    detail: str = ""


class Driver(Protocol):
    def switch(self, node: str, on: bool) -> Outcome: ...


def driver_for(cfg: DriverConfig) -> Driver:
    makers: dict[DriverKind, Callable[[DriverConfig], Driver]] = {
        DriverKind.COMMAND: CommandDriver,
        DriverKind.IPMI: IpmiDriver,
        DriverKind.CLOUD: CloudDriver,
        DriverKind.LAB: LabDriver,
    }
    return makers[cfg.kind](cfg)


def switch_all(driver: Driver, nodes: Sequence[str], *, on: bool, parallel: int) -> list[Outcome]:
    """Switch every node, ``parallel`` at a time; outcomes in the nodes' order."""
    if not nodes:
        return []

    def one(node: str) -> Outcome:
        if not _NODE.match(node):
            return Outcome(node, False, "not a valid node name")
        try:
            return driver.switch(node, on)
        except Exception as exc:  # a driver's bug must not stop the others
            return Outcome(node, False, f"{type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(max_workers=min(parallel, len(nodes))) as pool:
        return list(pool.map(one, nodes))


def private_file(path: Path) -> str | None:
    """Why ``path`` may not hold a secret (None when it may): it must be a regular file that
    neither group nor others can read."""
    try:
        st = path.stat()
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_mode & 0o077:
        return f"{path} is readable by others (mode {stat.S_IMODE(st.st_mode):o}); chmod 600"
    return None


def _run(argv: list[str], node: str, timeout: float) -> Outcome:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return Outcome(node, False, f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return Outcome(node, False, f"{argv[0]}: no answer within {timeout:g} s")
    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
    last = said[-1][:_DETAIL_CHARS] if said else ""
    if done.returncode != 0:
        return Outcome(node, False, f"{argv[0]} exited {done.returncode}: {last}".rstrip(": "))
    return Outcome(node, True, last)


class CommandDriver:
    def __init__(self, cfg: DriverConfig) -> None:
        self.cfg = cfg

    def argv(self, node: str, on: bool) -> list[str]:
        template = self.cfg.resume if on else self.cfg.suspend
        return [part.replace(NODE_PLACEHOLDER, node) for part in template]

    def switch(self, node: str, on: bool) -> Outcome:
        return _run(self.argv(node, on), node, self.cfg.timeout_s)


class IpmiDriver:
    def __init__(self, cfg: DriverConfig) -> None:
        self.cfg = cfg

    def argv(self, node: str, action: str) -> list[str]:
        host = self.cfg.host.replace(NODE_PLACEHOLDER, node)
        return [
            self.cfg.ipmitool,
            "-I",
            self.cfg.interface,
            "-H",
            host,
            "-U",
            self.cfg.user,
            "-f",
            str(self.cfg.password_file),
            "chassis",
            "power",
            action,
        ]

    def switch(self, node: str, on: bool) -> Outcome:
        if self.cfg.password_file is None:
            return Outcome(node, False, "no password_file")
        if why := private_file(self.cfg.password_file):
            return Outcome(node, False, why)
        return _run(self.argv(node, "on" if on else "off"), node, self.cfg.timeout_s)

    def status(self, node: str) -> Outcome:
        """``chassis power status``: ``ok`` with ipmitool's line (``Chassis Power is on``)."""
        return _run(self.argv(node, "status"), node, self.cfg.timeout_s)


class CloudDriver:
    def __init__(self, cfg: DriverConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.cfg = cfg
        self.transport = transport

    def switch(self, node: str, on: bool) -> Outcome:
        if self.cfg.token_file is None:
            return Outcome(node, False, "no token_file")
        if why := private_file(self.cfg.token_file):
            return Outcome(node, False, why)
        token = self.cfg.token_file.read_text(encoding="utf-8").strip()
        url = f"{self.cfg.url}/nodes/{node}/{'start' if on else 'stop'}"
        try:
            with httpx.Client(timeout=self.cfg.timeout_s, transport=self.transport) as http:
                answer = http.post(url, headers={"Authorization": f"Bearer {token}"})
        except httpx.TimeoutException:
            return Outcome(node, False, f"{url}: no answer within {self.cfg.timeout_s:g} s")
        except httpx.HTTPError as exc:
            return Outcome(node, False, f"{url}: {exc}")
        if answer.is_success:
            return Outcome(node, True, f"HTTP {answer.status_code}")
        body = " ".join(answer.text.split())[:_DETAIL_CHARS]
        return Outcome(node, False, f"{url}: HTTP {answer.status_code} {body}".rstrip())


class LabDriver:
    def __init__(self, cfg: DriverConfig) -> None:
        self.cfg = cfg

    def switch(self, node: str, on: bool) -> Outcome:
        argv = [*self.cfg.helper, "start" if on else "stop", node]
        return _run(argv, node, self.cfg.timeout_s)
