"""Hostile input: refused with a clear message, or carried to the job byte-for-byte as data.

The second half runs rendered scripts with bash (no Slurm needed for a single process) and
checks that the program received exactly the words and environment the spec held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobspec.render import render
from tests.unit.jobspec.conftest import errors_of, make, spec_data

HOSTILE = [
    "'; rm -rf ~'",
    "$(id)",
    "`id`",
    "\"quoted\" and 'single'",
    "#SBATCH --partition=evil",
    "a\\b\\\\c",
    "$HOME ${PATH} $$ $! $?",
    "; echo pwned > /tmp/pwned &",
    "ünïcödé ✓ 日本語 \u202e",
    "*.py ~ {a,b} [x] !",
    "--partition=evil",
    " leading and trailing ",
    "",
]
HOSTILE_MULTILINE = ["line1\nline2", "\n#SBATCH --qos=high\nrm -rf ~", "cr\rlf", "tab\tbell\a"]


# ------------------------------------------------------------------ refused
@pytest.mark.parametrize("value", [v for v in HOSTILE if v] + HOSTILE_MULTILINE)
@pytest.mark.parametrize(
    "field",
    [
        "name",
        "project",
        "partition",
        "workdir",
        "outputs",
        "conda",
        "modules",
        "mounts",
        "features",
        "nodes",
        "email",
        "group",
    ],
)
def test_identifiers_and_paths_refuse_hostile_text(field: str, value: str) -> None:
    where = {
        "modules": {"modules": [value]},
        "mounts": {"mounts": [{"name": "d", "path": value}]},
        "features": {"affinity": {"features": [value]}},
        "nodes": {"affinity": {"nodes": [value]}},
        "email": {"notify": {"email": value}},
        "group": {"affinity": {"anti_affinity_group": value}},
    }.get(field, {field: value})
    messages = errors_of(spec_data(**where))
    assert messages
    assert all(": " in m for m in messages)


@pytest.mark.parametrize("value", HOSTILE_MULTILINE)
def test_multiline_values_are_refused_outside_scripts(value: str) -> None:
    (msg,) = errors_of(spec_data(env={"X": value}))
    assert msg.startswith("env.X: must not contain")
    (msg,) = errors_of(spec_data(command=["echo", value]))
    assert msg.startswith("command[1]: must not contain")


def test_hostile_env_names_are_refused() -> None:
    for name in ["A;B", "$(id)", "A B", "A=B", "PATH\n", "é"]:
        (msg,) = errors_of(spec_data(env={name: "x"}))
        assert "is not a valid variable name" in msg


# ------------------------------------------------------------------ carried as data
DUMP = (
    "import json, os, sys; "
    "json.dump({'argv': sys.argv[1:], 'env': {k: os.environ.get(k) for k in "
    "['HOSTILE_%d' % i for i in range(int(os.environ['HOSTILE_N']))]}}, "
    "open(os.environ['DUMP_TO'], 'w', encoding='utf-8'))"
)


def _run(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "SLURM_JOB_ID": "7"}
    return subprocess.run(
        ["bash", "-s"],
        input=script,
        text=True,
        capture_output=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=60,
    )


def test_command_words_and_env_values_reach_the_program_byte_for_byte(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    env = {f"HOSTILE_{i}": v for i, v in enumerate(HOSTILE)}
    env |= {"HOSTILE_N": str(len(HOSTILE)), "DUMP_TO": str(dump)}
    spec = make(command=[sys.executable, "-c", DUMP, *HOSTILE], env=env)
    done = _run(render(spec).script, tmp_path)
    assert done.returncode == 0, done.stderr
    got: dict[str, Any] = json.loads(dump.read_text(encoding="utf-8"))
    assert got["argv"] == HOSTILE
    assert got["env"] == {f"HOSTILE_{i}": v for i, v in enumerate(HOSTILE)}
    assert not Path("/tmp/pwned").exists()  # the file the payload would write


def test_a_command_line_is_split_into_words_not_run_by_a_shell(tmp_path: Path) -> None:
    out = tmp_path / "args.json"
    line = (
        f"{sys.executable} -c 'import json,sys; json.dump(sys.argv[1:], open(sys.argv[1], \"w\"))'"
    )
    spec = make(command=f"{line} {out} '$(id)' `id` \"; touch {tmp_path}/pwned\"")
    done = _run(render(spec).script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == [str(out), "$(id)", "`id`", f"; touch {tmp_path}/pwned"]
    assert not (tmp_path / "pwned").exists()


def test_a_script_is_carried_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "script.txt"
    body = (
        'printf "%s" "$BASH_EXECUTION_STRING" > "$SCRIPT_COPY"\n'
        "exit 0\n"
        + "\n".join([*HOSTILE, "#SBATCH --qos=high", "'; rm -rf ~'", "unterminated ' quote"])
        + "\n\ttabbed ✓\n"
    )
    spec = make(command=None, script=body, env={"SCRIPT_COPY": str(out)})
    done = _run(render(spec).script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == body


def test_no_sbatch_directive_can_be_smuggled_into_the_header() -> None:
    spec = make(
        command=None,
        script="#SBATCH --partition=evil\n#SBATCH --qos=high\necho hi\n",
        env={"X": "#SBATCH --qos=high"},
    )
    script = render(spec).script
    header = []
    for line in script.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            break
        header.append(line)
    assert not any(line.startswith("#SBATCH") for line in header)
    assert script.splitlines()[:2] == ["#!/bin/bash", "set -euo pipefail"]
