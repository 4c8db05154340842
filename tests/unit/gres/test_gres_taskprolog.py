"""The TaskProlog, run for real with bash against recorded `scontrol show job -d` text.

A fake ``scontrol`` (pointed to by ``AIPOOL_SCONTROL``) serves the recorded job text, expands
hostlists and logs every call, so the tests also see how often slurmctld would be asked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gres.inventory import Inventory, load_inventory
from gres.render import render_task_prolog
from gres.taskprolog import render_task_prolog_script

REPO = Path(__file__).resolve().parents[3]
SCONTROL_TEXT = REPO / "tests" / "data" / "gres" / "scontrol"

FAKE_SCONTROL = """#!{python}
import os, re, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
if os.environ.get("FAKE_FAIL"):
    sys.exit(1)
if args[:2] == ["show", "hostnames"]:
    for part in re.findall(r"[^,\\[]+(?:\\[[^\\]]*\\])?", args[2]):
        m = re.fullmatch(r"(.*)\\[(.*)\\]", part)
        if not m:
            print(part)
            continue
        for rng in m[2].split(","):
            lo, _, hi = rng.partition("-")
            for n in range(int(lo), int(hi or lo) + 1):
                print(f"{{m[1]}}{{n:0{{len(lo)}}d}}")
elif args[:3] == ["show", "job", "-d"] and args[3] == os.environ["FAKE_JOB_ID"]:
    sys.stdout.write(open(os.environ["FAKE_JOB_TEXT"]).read())
else:
    sys.exit(1)
"""


@pytest.fixture(scope="module")
def inventory() -> Inventory:
    lab = load_inventory(REPO / "gres" / "examples" / "lab.yaml")
    pool = load_inventory(REPO / "gres" / "examples" / "gpu-pool.yaml")
    return Inventory(nodes=lab.nodes + pool.nodes)


@pytest.fixture
def script(tmp_path: Path, inventory: Inventory) -> Path:
    path = tmp_path / "taskprolog.sh"
    path.write_text(render_task_prolog(inventory))
    path.chmod(0o755)
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE_SCONTROL.format(python=sys.executable))
    fake.chmod(0o755)
    return path


def run_prolog(
    script: Path, node: str, text_file: str | None, job_id: str = "41", **env: str
) -> tuple[str, list[str]]:
    """Run the TaskProlog as slurmd would; return its stdout and the scontrol calls made."""
    tmp = script.parent
    log = tmp / "calls.log"
    log.write_text("")
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AIPOOL_SCONTROL": str(tmp / "scontrol"),
        "FAKE_LOG": str(log),
        "FAKE_JOB_ID": job_id,
        "FAKE_JOB_TEXT": str(SCONTROL_TEXT / (text_file or "cpu-only-on-npu-node.txt")),
        "SLURMD_NODENAME": node,
        "SLURM_JOB_ID": job_id,
        **env,
    }
    proc = subprocess.run(
        [str(script)], env=full_env, cwd=tmp, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout, log.read_text().splitlines()


@pytest.mark.parametrize(
    ("text_file", "node", "expected"),
    [
        ("npu-two-cards.txt", "npu1", "0,1"),
        ("npu-two-nodes.txt", "asc01", "0,1,4"),
        ("npu-two-nodes.txt", "asc02", "0,1,4"),
        ("npu-two-nodes.txt", "asc03", "7"),
        ("npu-whole-and-vnpu.txt", "asc07", "5,101,105"),
        ("hostile-text.txt", "npu1", "3"),
    ],
)
def test_exports_the_devices_of_this_node(
    script: Path, text_file: str, node: str, expected: str
) -> None:
    out, _ = run_prolog(script, node, text_file)
    assert out == f"export ASCEND_RT_VISIBLE_DEVICES={expected}\n"


@pytest.mark.parametrize(
    ("text_file", "node"),
    [
        ("cpu-only-on-npu-node.txt", "npu1"),
        ("npu-two-nodes.txt", "asc04"),
        ("malformed-idx.txt", "npu1"),
    ],
)
def test_silent_without_npus_on_this_node(script: Path, text_file: str, node: str) -> None:
    out, calls = run_prolog(script, node, text_file)
    assert out == ""
    assert calls[0] == "show job -d 41"


@pytest.mark.parametrize("node", ["gpu1", "cpu1", "hgxa01", "unknown-node"])
def test_nodes_without_npus_never_ask_slurmctld(script: Path, node: str) -> None:
    out, calls = run_prolog(script, node, "npu-two-cards.txt")
    assert (out, calls) == ("", [])


def test_hostlist_expansion_is_only_used_for_ranges(script: Path) -> None:
    _, calls = run_prolog(script, "npu1", "npu-two-cards.txt")
    assert calls == ["show job -d 41"]
    _, calls = run_prolog(script, "asc03", "npu-two-nodes.txt")
    assert calls == ["show job -d 41", "show hostnames asc[01-02]"]


def test_job_text_is_never_executed(script: Path) -> None:
    out, _ = run_prolog(script, "npu1", "hostile-text.txt")
    assert out == "export ASCEND_RT_VISIBLE_DEVICES=3\n"
    assert not (script.parent / "pwned").exists()


@pytest.mark.parametrize(
    "env",
    [
        {"SLURM_JOB_ID": ""},
        {"SLURM_JOB_ID": "41; id"},
        {"SLURMD_NODENAME": ""},
        {"FAKE_FAIL": "1"},
    ],
)
def test_missing_or_odd_environment_is_silent(script: Path, env: dict[str, str]) -> None:
    out, _ = run_prolog(script, "npu1", "npu-two-cards.txt", **env)
    assert out == ""


def _bash(script: Path, code: str, stdin: str = "", *args: str) -> subprocess.CompletedProcess[str]:
    """Source the script (which defines functions only) and run ``code`` with ``args``."""
    return subprocess.run(
        ["bash", "-c", f'set -u; source "$1"; shift; {code}', "test", str(script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "AIPOOL_SCONTROL": str(script.parent / "scontrol"),
            "FAKE_LOG": str(script.parent / "calls.log"),
            "FAKE_JOB_ID": "0",
            "FAKE_JOB_TEXT": "/dev/null",
        },
    )


@pytest.mark.parametrize(
    ("idx", "expected"),
    [("0", "0"), ("0-1", "0 1"), ("0-1,4", "0 1 4"), ("3,7-9", "3 7 8 9"), ("08", "8")],
)
def test_expand_idx(script: Path, idx: str, expected: str) -> None:
    proc = _bash(script, 'aipool_expand_idx "$1"', "", idx)
    assert proc.returncode == 0
    assert proc.stdout.split() == expected.split()


@pytest.mark.parametrize("idx", ["", "3-1", "a", "1,,2", "0-", "$(id)", "1 2", "123456"])
def test_expand_idx_rejects(script: Path, idx: str) -> None:
    proc = _bash(script, 'aipool_expand_idx "$1"', "", idx)
    assert proc.returncode == 1
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("text_file", "node", "expected"),
    [
        ("npu-two-cards.txt", "npu1", "0 1"),
        ("npu-two-nodes.txt", "asc02", "0 1 4"),
        ("npu-whole-and-vnpu.txt", "asc07", "5 7 11"),
        ("cpu-only-on-npu-node.txt", "npu1", ""),
        ("hostile-text.txt", "npu1", "3"),
    ],
)
def test_npu_indexes_from_recorded_text(
    script: Path, text_file: str, node: str, expected: str
) -> None:
    text = (SCONTROL_TEXT / text_file).read_text()
    proc = _bash(script, 'aipool_npu_indexes "$1"', text, node)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == expected.split()


def test_npu_indexes_fails_on_malformed_idx(script: Path) -> None:
    text = (SCONTROL_TEXT / "malformed-idx.txt").read_text()
    proc = _bash(script, 'aipool_npu_indexes "$1"', text, "npu1")
    assert (proc.returncode, proc.stdout) == (1, "")


def test_map_of_each_npu_node(script: Path) -> None:
    proc = _bash(
        script, "aipool_npu_map asc07; aipool_npu_map npu1; aipool_npu_map gpu1 || echo no"
    )
    assert proc.stdout.splitlines() == [
        "0 1 2 3 4 5 100 101 102 103 104 105",
        "0 1 2 3 4 5 6 7",
        "no",
    ]


def test_sourcing_runs_nothing(script: Path) -> None:
    proc = _bash(script, "true")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_script_rejects_unsafe_map_input() -> None:
    with pytest.raises(ValueError, match="node name"):
        render_task_prolog_script({"a'b": {"npu": [0]}})
    with pytest.raises(ValueError, match="non-negative"):
        render_task_prolog_script({"npu1": {"npu": [-1]}})
