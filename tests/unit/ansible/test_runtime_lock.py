"""The aipool role installs the job runtime from the lock of its Python (requirements/,
scripts/lock.sh), and stops on a Python that has none, naming those that have one. The install
itself is tested for real in tests/integration/test_ansible.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
ANSIBLE = ROOT / "ansible"
BIN = Path(sys.executable).parent


def choose(tmp_path: Path, settings: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The role's runtime_lock tasks on localhost; prints the lock chosen."""
    play = [
        {
            "name": "choose the runtime's lock",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Choose",
                    "ansible.builtin.include_role": {
                        "name": "aipool",
                        "tasks_from": "runtime_lock",
                    },
                },
                {
                    "name": "Show",
                    "ansible.builtin.debug": {"msg": "lock=[{{ aipool_runtime_lock_file }}]"},
                },
            ],
        }
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(settings))
    argv = [
        str(BIN / "ansible-playbook"),
        *("-i", "localhost,", "-c", "local"),
        *("-e", f"ansible_python_interpreter={sys.executable}"),
        *("-e", f"@{tmp_path / 'vars.yml'}"),
        str(tmp_path / "play.yml"),
    ]
    env = {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        argv, cwd=ANSIBLE, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def test_the_lock_of_the_runtimes_python(tmp_path: Path) -> None:
    done = choose(tmp_path, {"aipool_runtime_python": "/usr/bin/python3"})
    assert done.returncode == 0, done.stdout[-3000:]
    version = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lock = (ROOT / "requirements" / f"runtime-{version}.txt").resolve()
    shown = done.stdout.split("lock=[", 1)[1].split("]", 1)[0]
    assert Path(shown).resolve() == lock


def test_a_python_without_a_lock_stops_the_play_naming_the_supported_ones(
    tmp_path: Path,
) -> None:
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\necho 3.9\n")  # what Debian 11's would answer
    python.chmod(0o755)
    done = choose(tmp_path, {"aipool_runtime_python": str(python)})
    assert done.returncode != 0
    assert f"{python}, is Python 3.9: AIPool supports Python 3.11 and 3.13" in done.stdout, (
        done.stdout[-3000:]
    )


def test_a_sites_own_lock_and_none(tmp_path: Path) -> None:
    own = tmp_path / "site-lock.txt"
    done = choose(tmp_path, {"aipool_runtime_lock": str(own)})
    assert done.returncode != 0
    assert f"no such file on the controller: {own}" in done.stdout, done.stdout[-3000:]
    own.write_text("")
    done = choose(tmp_path, {"aipool_runtime_lock": str(own)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"lock=[{own}]" in done.stdout
    done = choose(tmp_path, {"aipool_runtime_lock": ""})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "lock=[]" in done.stdout
