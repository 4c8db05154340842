"""The locks in requirements/ (scripts/lock.sh): each supported Python has one for the
development environment ([dev,lab]) and one for the job runtime ([lab]); every package pinned,
with hashes; every requirement of pyproject.toml met by its pin; the runtime a subset of the
development environment without its tools; and the environment running these tests installed
exactly as its lock says."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "requirements"
PYTHONS = ("3.11", "3.13")  # Debian 12's and Debian 13's
KINDS = {"venv": ("dev", "lab"), "runtime": ("lab",)}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: frozenset[str]


def read_lock(path: Path) -> dict[str, Pin]:
    """name -> pin of a pip requirements file as uv writes it (`name==version \\`, then
    `--hash=` lines, then `# via` comments)."""
    pins: dict[str, Pin] = {}
    for raw in path.read_text().replace("\\\n", " ").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, _, rest = line.partition(" --")
        req = Requirement(spec)
        specs = list(req.specifier)
        assert len(specs) == 1, f"{path.name}: {spec!r} is not pinned with =="
        assert specs[0].operator == "==", f"{path.name}: {spec!r} is not pinned with =="
        assert req.url is None, f"{path.name}: {spec!r}"
        assert not req.marker, f"{path.name}: {spec!r}"
        name = canonicalize_name(req.name)
        assert name not in pins, f"{path.name}: {name} pinned twice"
        pins[name] = Pin(Version(specs[0].version), frozenset(HASH.findall("--" + rest)))
    return pins


def wanted(python: str, extras: tuple[str, ...]) -> list[Requirement]:
    """pyproject.toml's requirements that apply on x86_64 Linux with this Python."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # Marker.evaluate takes what this leaves out from the Python running the tests
    env = {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    groups = [("", project["dependencies"])]
    groups += [(e, project["optional-dependencies"][e]) for e in extras]
    reqs = []
    for extra, lines in groups:
        for line in lines:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({**env, "extra": extra}):
                reqs.append(req)
    return reqs


LOCK_IDS = [f"{kind}-{py}" for py in PYTHONS for kind in KINDS]


@pytest.mark.parametrize("lock", LOCK_IDS)
def test_every_requirement_is_pinned_within_its_range_with_hashes(lock: str) -> None:
    kind, python = lock.split("-")
    pins = read_lock(LOCKS / f"{lock}.txt")
    unhashed = sorted(name for name, pin in pins.items() if not pin.hashes)
    assert not unhashed, f"{lock}.txt: no hashes for {unhashed} (run scripts/lock.sh)"
    unmet = []
    for req in wanted(python, KINDS[kind]):
        pin = pins.get(canonicalize_name(req.name))
        if pin is None or not req.specifier.contains(pin.version, prereleases=True):
            unmet.append(f"{req} (locked: {pin.version if pin else 'nothing'})")
    assert not unmet, f"{lock}.txt does not satisfy pyproject.toml: {unmet} (scripts/lock.sh)"


@pytest.mark.parametrize("python", PYTHONS)
def test_the_runtime_is_the_development_environments_versions_without_its_tools(
    python: str,
) -> None:
    venv = read_lock(LOCKS / f"venv-{python}.txt")
    runtime = read_lock(LOCKS / f"runtime-{python}.txt")
    differ = sorted(n for n, pin in runtime.items() if venv.get(n) != pin)
    assert not differ, f"runtime-{python}.txt and venv-{python}.txt differ on {differ}"
    lab = {canonicalize_name(r.name) for r in wanted(python, ("lab",))}
    tools = {canonicalize_name(r.name) for r in wanted(python, ("dev",))} - lab
    assert tools <= set(venv)
    assert not tools & set(runtime), f"development tools in the runtime: {tools & set(runtime)}"


def test_there_is_a_lock_for_each_supported_python_and_no_other() -> None:
    found = sorted(p.name for p in LOCKS.glob("*-3.*.txt"))
    assert found == sorted(f"{lock}.txt" for lock in LOCK_IDS)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requires = Requirement("python" + project["requires-python"]).specifier
    assert all(requires.contains(p) for p in PYTHONS)


def test_read_lock_finds_pins_without_hashes(tmp_path: Path) -> None:
    lock = tmp_path / "venv-3.11.txt"
    lock.write_text(
        "# header\nclick==8.3.1 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via aipool\n"
        "PyYAML==6.0.4\n    # via aipool\n"
    )
    pins = read_lock(lock)
    assert pins["click"] == Pin(Version("8.3.1"), frozenset({"--hash=sha256:" + "a" * 64}))
    assert pins["pyyaml"] == Pin(Version("6.0.4"), frozenset())
    lock.write_text("click>=8\n")
    with pytest.raises(AssertionError, match="not pinned"):
        read_lock(lock)


def test_the_environment_running_the_tests_is_installed_as_its_lock_says() -> None:
    """scripts/bootstrap.sh installs .venv from its lock: the same install twice, on any
    machine, gives these versions."""
    if Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        pytest.skip(f"not the checkout's .venv (scripts/bootstrap.sh) but {sys.prefix}")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert python in PYTHONS, f"Python {python} has no lock; supported: {', '.join(PYTHONS)}"
    wrong = []
    for name, pin in read_lock(LOCKS / f"venv-{python}.txt").items():
        try:
            have = Version(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            wrong.append(f"{name} (locked {pin.version}, not installed)")
            continue
        if have != pin.version:
            wrong.append(f"{name} (locked {pin.version}, installed {have})")
    assert not wrong, f".venv is not what venv-{python}.txt locks: {wrong} (scripts/bootstrap.sh)"
