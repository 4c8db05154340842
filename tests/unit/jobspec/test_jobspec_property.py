"""Property: every spec the schema accepts renders to a script bash can parse, whose header
holds no ``#SBATCH`` line, with argv free of control characters; and it round-trips."""

from __future__ import annotations

import shlex
import subprocess
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from jobspec.codec import spec_to_data
from jobspec.errors import SpecError
from jobspec.model import TopologyKind
from jobspec.render import render
from jobspec.schema import load_spec
from tests.unit.jobspec.test_jobspec_hostile import HOSTILE, HOSTILE_MULTILINE

hostile = st.sampled_from(HOSTILE + HOSTILE_MULTILINE)
free_text = st.text(max_size=30)
printable = st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=30)
odd_text = st.one_of(free_text, hostile)


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any] = odd_text) -> Any:
    """``valid`` 19 times in 20, else ``odd``: specs are accepted often enough to render."""
    # hypothesis favours the ends of a range, so the odd branch sits in the middle
    return st.integers(0, 19).flatmap(lambda i: odd if i == 11 else valid)


word = mostly(st.one_of(printable, st.sampled_from(HOSTILE)))
program_name = mostly(st.sampled_from(["python3", "/usr/bin/env", "./train"]))
argv = st.builds(lambda p, rest: [p, *rest], program_name, st.lists(word, max_size=5))

name = mostly(st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,20}", fullmatch=True))
path = mostly(st.from_regex(r"(/[a-z0-9_][a-z0-9_.]{0,8}){1,4}", fullmatch=True))
env_name = mostly(st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True))
gpus = mostly(st.sampled_from([0, 0.25, "1/8", "5/32", 1, 2, 4]), st.sampled_from([0.3, "7/16"]))


def resources(het: bool) -> st.SearchStrategy[dict[str, Any]]:
    base: dict[str, st.SearchStrategy[Any]] = {
        "gpus": gpus,
        "cpus": st.integers(1, 8),
        "memory": st.sampled_from(["1G", "512M", 4096]),
    }
    if not het:
        base |= {
            "nodes": mostly(st.just(1), st.integers(2, 3)),
            "tasks_per_node": mostly(st.just(1), st.integers(2, 4)),
            "time": st.sampled_from([30, "2h", "1:00:00"]),
        }
    return st.fixed_dictionaries({}, optional=base)


@st.composite
def topologies(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    kind = draw(st.sampled_from(list(TopologyKind)))
    if not kind.heterogeneous:
        return {"kind": kind.value}, draw(resources(False))
    roles = {}
    for role in kind.roles:
        r: dict[str, Any] = {"resources": draw(resources(True))}
        if role not in ("master", "scheduler"):
            r["replicas"] = draw(st.integers(1, 3))
        if draw(st.booleans()):
            r["command"] = draw(argv)
        roles[role] = r
    return {"kind": kind.value, "roles": roles}, {}


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    topology, res = draw(topologies())
    data: dict[str, Any] = {"name": draw(name), "topology": topology, "resources": res}
    programs = ["command", "line", "script"] + (["jupyter"] if topology["kind"] == "single" else [])
    program = draw(st.sampled_from(programs))
    if program == "command":
        data["command"] = draw(argv)
    elif program == "line":
        data["command"] = draw(mostly(argv.map(shlex.join)))
    elif program == "script":
        data["script"] = "\n".join(draw(st.lists(mostly(printable, hostile), max_size=6)))
    else:
        data["jupyter"] = True
    optional: dict[str, st.SearchStrategy[Any]] = {
        "env": st.dictionaries(env_name, word, max_size=4),
        "workdir": path,
        "outputs": path,
        "conda": mostly(st.sampled_from(["torch", "/opt/envs/torch"])),
        "modules": st.lists(st.one_of(st.just("cuda/12.1"), word), max_size=2),
        "mounts": st.lists(st.fixed_dictionaries({"name": name, "path": path}), max_size=2),
        "project": mostly(st.just("nlp")),
        "restart": st.fixed_dictionaries(
            {"max_restarts": st.integers(0, 3)}, optional={"on_failure": st.booleans()}
        ),
        "dependencies": st.fixed_dictionaries({"afterok": st.lists(st.integers(1, 99))}),
        "affinity": st.fixed_dictionaries(
            {}, optional={"features": st.lists(word, max_size=2), "exclude": st.lists(name)}
        ),
    }
    for key, strategy in optional.items():
        if draw(st.integers(0, 3)) == 0:
            data[key] = draw(strategy)
    return data


def _header_has_directive(script: str) -> bool:
    for line in script.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            return False
        if line.startswith("#SBATCH"):
            return True
    return False


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_every_accepted_spec_renders_to_a_valid_script(data: dict[str, Any]) -> None:
    try:
        spec = load_spec(data)
    except SpecError as exc:
        event("refused")
        refused = exc.messages
    else:
        refused = ()
    if refused:
        assert all(m.strip() for m in refused)
        return
    event(f"accepted {spec.topology.kind.value}")
    assert load_spec(spec_to_data(spec)) == spec
    out = render(spec)
    assert all(arg.isprintable() for arg in out.argv), out.argv
    assert not _header_has_directive(out.script)
    done = subprocess.run(
        ["bash", "-n"], input=out.script, text=True, capture_output=True, check=False
    )
    assert done.returncode == 0, (done.stderr, out.script)
