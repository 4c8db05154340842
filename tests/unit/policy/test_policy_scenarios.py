"""YAML scenarios that combine policies (tests/data/policy/*.yaml, format in its README)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from slurm_plugins.node import Sample
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.engine import plan
from slurm_plugins.policy.plan import Plan
from slurm_plugins.policy.resources import Amounts
from slurm_plugins.policy.snapshot import DaemonState, Mark, Snapshot, UsageRecord
from tests.unit.policy.builders import NOW, apply_state, cpu_node, gpu_node, job, npu_node, snap

DATA = Path(__file__).parents[2] / "data" / "policy"
SCENARIOS = sorted(DATA.glob("*.yaml"))


def build_node(d: dict[str, Any]) -> Any:
    extra = {k: d[k] for k in ("reason",) if k in d}
    if "flags" in d:
        extra["flags"] = frozenset(d["flags"])
    if "npus" in d:
        return npu_node(d["name"], npus=d["npus"], **extra)
    if "gpus" in d:
        n = gpu_node(d["name"], gpus=d["gpus"], **extra)
        if "card_used" in d:
            from dataclasses import replace

            n = replace(n, card_used=tuple(d["card_used"]))
        return n
    return cpu_node(d["name"], **extra)


def build_job(d: dict[str, Any]) -> Any:
    kw = {k: v for k, v in d.items() if k not in {"id", "submit", "start", "nodes"}}
    if "labels" in d:
        kw["labels"] = {k: str(v) for k, v in d["labels"].items()}
    if "submit" in d:
        kw["submit"] = NOW + d["submit"]
    if d.get("state") == "RUNNING":
        kw["nodes"] = tuple(d["nodes"])
        kw["node_count"] = len(d["nodes"])
        kw["start"] = NOW + d.get("start", -600)
    return job(d["id"], **kw)


def build(doc: dict[str, Any]) -> tuple[Snapshot, Any]:
    cfg = parse_config({**doc["config"], "state_dir": "/nonexistent"})
    usage = [
        UsageRecord(
            u["account"],
            u["user"],
            NOW - u.get("ago", 0) - u["hours"] * 3600,
            NOW - u.get("ago", 0),
            Amounts(u.get("gpu", 0), u.get("npu", 0), u.get("cpu", 0), 0),
        )
        for u in doc.get("usage", [])
    ]
    samples = {
        int(j): tuple(
            Sample(NOW + t, s["util"]) for t in range(int(s["since"]), 1, int(s.get("step", 60)))
        )
        for j, s in doc.get("samples", {}).items()
    }
    st = doc.get("state", {})
    state = DaemonState(
        warned={int(k): Mark(NOW + v) for k, v in st.get("warned", {}).items()},
        signalled={int(k): Mark(NOW + v) for k, v in st.get("signalled", {}).items()},
        released={int(k): Mark(NOW + v) for k, v in st.get("released", {}).items()},
        holds={int(k): Mark(NOW) for k in st.get("holds", [])},
        base_qos={int(k): v for k, v in st.get("base_qos", {}).items()},
    )
    s = snap(
        [build_job(j) for j in doc["jobs"]],
        [build_node(n) for n in doc["nodes"]],
        tenants=cfg.tenants,
        usage=usage,
        samples=samples,
        state=state,
    )
    return s, cfg


def check(p: Plan, expect: dict[str, Any]) -> None:
    if "order" in expect:
        assert list(p.order) == expect["order"]
    if "holds" in expect:
        assert sorted(h.job_id for h in p.holds) == sorted(expect["holds"])
    if "releases" in expect:
        assert sorted(h.job_id for h in p.releases) == sorted(expect["releases"])
    if "actions" in expect:
        got = {a.job_id: a.action.value for a in p.actions}
        assert got == {int(k): v for k, v in expect["actions"].items()}
    for key, attr in (("exc", "exc_nodes"), ("req", "req_nodes"), ("qos", "qos")):
        if key in expect:
            got = {c.job_id: getattr(c, attr) for c in p.job_changes if getattr(c, attr)}
            assert got == {int(k): v for k, v in expect[key].items()}
    for jid, text in expect.get("reasons", {}).items():
        reasons = p.reasons.get(int(jid), ())
        assert any(text in r for r in reasons), f"job {jid}: {text!r} not in {reasons}"


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    s, cfg = build(doc)
    p = plan(s, cfg.engine)
    check(p, doc["expect"])
    if doc["expect"].get("stable"):
        again = plan(apply_state(s, p), cfg.engine)
        assert again.empty, f"second cycle still changes: {again.summary()}"


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) >= 4


def test_policies_never_import_the_slurm_client() -> None:
    """The engine and every policy load without the client (DESIGN §2: decisions are pure)."""
    import subprocess
    import sys

    code = (
        "import sys, slurm_plugins.policy.engine, slurm_plugins.policy.config\n"
        "bad = sorted(m for m in sys.modules if m.startswith('slurm_plugins.client') or "
        "m.startswith('flask'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
