"""A refusal explained offline says what the hook says (slurmrestd drops the hook's text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_plugins.admission.explain import explain, job_desc, replay
from slurm_plugins.client.job import Component, Gres, JobRequest
from tests.unit.admission.luarun import install, run_one, submit


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("explain") / "etc")


def job(*parts: Component) -> JobRequest:
    return JobRequest(parts, name="j", environment={"PATH": "/bin"})


def test_a_refusal_reads_word_for_word_as_the_hook_says_it(hook: Path) -> None:
    part = Component(account="cs101", nodes=2, gres=(Gres("gpu", 4, "a100"),), time_limit=30)
    said = explain(hook, "carol", job(part))
    desc, _ = job_desc("carol", part)
    fields = {k: v for k, v in desc.items() if k not in ("user_name", "user_id")}
    direct = run_one(hook, submit("same job", "carol", **fields))
    assert not direct.accepted
    assert said == direct.user
    assert "tenant cs101 may use at most 4 per job" in said[0]


def test_every_component_of_a_heterogeneous_job_is_replayed(hook: Path) -> None:
    fine = Component(account="cs101", gres=(Gres("shard", 8),), time_limit=30)
    big = Component(account="cs101", nodes=2, gres=(Gres("gpu", 4, "a100"),), time_limit=30)
    assert explain(hook, "carol", job(fine)) == []
    said = explain(hook, "carol", job(fine, big))
    assert said == explain(hook, "carol", job(big))
    assert "tenant cs101 may use at most 4 per job" in said[0]


def test_an_accepted_job_and_a_missing_hook_say_nothing(hook: Path, tmp_path: Path) -> None:
    part = Component(account="cs101", gres=(Gres("shard", 8),), time_limit=30)
    assert explain(hook, "carol", job(part)) == []
    assert explain(tmp_path / "absent.lua", "carol", job(Component(account="cs101", nodes=9))) == []


def test_hostile_text_stays_data(hook: Path) -> None:
    part = Component(account="x';os.exit(3)--", qos="]]..os.execute('id')..[[")
    desc, uid = job_desc("carol", part, comment="]]..os.execute('id')..[[")
    said = replay(hook, {**desc, "partition": "\n"}, uid)
    assert said  # refused, with the hook's words; the values never ran as Lua
    assert all("\n" not in line for line in said)
    assert explain(hook, "carol", job(part))
