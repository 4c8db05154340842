"""The drivers against real processes and a real HTTP server: a fake ``ipmitool`` and a site
command on PATH that record their argv, and a loopback API for the cloud driver."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from slurm_plugins.power.config import DriverConfig, DriverKind
from slurm_plugins.power.drivers import (
    CloudDriver,
    CommandDriver,
    IpmiDriver,
    LabDriver,
    driver_for,
    switch_all,
)

# records its argv as JSON, one line per call; fails for nodes whose name contains "bad"
RECORDER = """#!/usr/bin/env python3
import json, os, sys
with open(os.environ["RECORD"], "a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
if any("bad" in a for a in sys.argv[1:]):
    print("Error: Unable to establish IPMI v2 / RMCP+ session", file=sys.stderr)
    sys.exit(1)
print("Chassis Power Control: Up/On")
"""


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("ipmitool", "node-power", "helper"):
        (bin_dir / name).write_text(RECORDER)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("RECORD", str(tmp_path / "calls.jsonl"))
    return tmp_path / "calls.jsonl"


def calls(record: Path) -> list[list[str]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def secret(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    path.chmod(mode)
    return path


def test_command_driver_substitutes_the_node_without_a_shell(tools: Path) -> None:
    cfg = DriverConfig(
        DriverKind.COMMAND, resume=("node-power", "on", "{node}"), suspend=("node-power", "off")
    )
    out = switch_all(CommandDriver(cfg), ["egpu1", "egpu2"], on=True, parallel=2)
    assert [o.ok for o in out] == [True, True]
    assert sorted(calls(tools)) == [["on", "egpu1"], ["on", "egpu2"]]
    assert CommandDriver(cfg).switch("egpu1", False).ok
    assert calls(tools)[-1] == ["off"]


def test_failures_carry_the_tools_words_and_bad_names_never_run(tools: Path) -> None:
    cfg = DriverConfig(DriverKind.COMMAND, resume=("node-power", "{node}"), suspend=("x",))
    out = switch_all(CommandDriver(cfg), ["bad1", "$(id)", "ok1"], on=True, parallel=4)
    assert [o.ok for o in out] == [False, False, True]
    assert "exited 1" in out[0].detail
    assert "RMCP+" in out[0].detail
    assert out[1].detail == "not a valid node name"
    assert ["$(id)"] not in calls(tools)


def test_missing_command_and_timeout(tmp_path: Path, tools: Path) -> None:
    gone = DriverConfig(DriverKind.COMMAND, resume=("no-such-tool",), suspend=("x",))
    assert CommandDriver(gone).switch("n1", True).detail == "no-such-tool: not found"
    slow = tmp_path / "bin" / "slow"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    cfg = DriverConfig(DriverKind.COMMAND, resume=("slow",), suspend=("x",), timeout_s=0.2)
    assert "no answer within 0.2 s" in CommandDriver(cfg).switch("n1", True).detail


def test_ipmi_passes_the_password_by_file(tmp_path: Path, tools: Path) -> None:
    cfg = DriverConfig(
        DriverKind.IPMI, user="admin", password_file=secret(tmp_path), host="{node}.bmc"
    )
    driver = IpmiDriver(cfg)
    assert driver.switch("egpu1", True).ok
    assert driver.status("egpu1").detail == "Chassis Power Control: Up/On"
    first = calls(tools)[0]
    assert first == [
        "-I",
        "lanplus",
        "-H",
        "egpu1.bmc",
        "-U",
        "admin",
        "-f",
        str(tmp_path / "secret"),
        "chassis",
        "power",
        "on",
    ]
    assert "s3cret" not in json.dumps(calls(tools))
    assert not driver.switch("bad1", False).ok


def test_ipmi_refuses_a_password_file_others_can_read(tmp_path: Path, tools: Path) -> None:
    cfg = DriverConfig(DriverKind.IPMI, user="admin", password_file=secret(tmp_path, 0o644))
    out = IpmiDriver(cfg).switch("egpu1", True)
    assert not out.ok
    assert "readable by others" in out.detail
    assert not tools.exists()  # ipmitool never ran


class Api(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:
        Api.seen.append((self.path, self.headers.get("Authorization", "")))
        if "broken" in self.path:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b'{"error": "no capacity in zone"}')
            return
        self.send_response(202)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def test_cloud_posts_start_and_stop_with_the_token(tmp_path: Path, api: str) -> None:
    Api.seen.clear()
    cfg = DriverConfig(DriverKind.CLOUD, url=api, token_file=secret(tmp_path))
    driver = driver_for(cfg)
    assert isinstance(driver, CloudDriver)
    assert driver.switch("egpu1", True).ok
    assert driver.switch("egpu1", False).ok
    assert Api.seen == [
        ("/v1/nodes/egpu1/start", "Bearer s3cret"),
        ("/v1/nodes/egpu1/stop", "Bearer s3cret"),
    ]
    failed = driver.switch("broken1", True)
    assert not failed.ok
    assert "HTTP 503" in failed.detail
    assert "no capacity" in failed.detail


def test_cloud_reports_an_unreachable_api(tmp_path: Path) -> None:
    cfg = DriverConfig(
        DriverKind.CLOUD, url="http://127.0.0.1:9/v1", token_file=secret(tmp_path), timeout_s=2
    )
    out = CloudDriver(cfg).switch("egpu1", True)
    assert not out.ok
    assert out.detail.startswith("http://127.0.0.1:9/v1/nodes/egpu1/start:")


def test_lab_driver_asks_the_helper(tools: Path) -> None:
    cfg = DriverConfig(DriverKind.LAB, helper=("helper", "--lab", "x"))
    assert LabDriver(cfg).switch("egpu1", True).ok
    assert LabDriver(replace(cfg)).switch("egpu1", False).ok
    assert calls(tools) == [["--lab", "x", "start", "egpu1"], ["--lab", "x", "stop", "egpu1"]]
