"""MLU, DCU and XPU cards through the portal: typed GRES on submit, one kind per job, and
held cards in words in both languages."""

from __future__ import annotations

from slurm_plugins.client.capacity import held
from slurm_plugins.client.models import Tres
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_jobs import body


def test_cards_of_each_kind_become_typed_gres(env: Env) -> None:
    for key, gres in (("mlus", "mlu:mlu370:2"), ("dcus", "dcu:k100_ai:2"), ("xpus", "xpu:p800:2")):
        r = env.api("alice").post(
            "/api/v1/jobs", json=body(env, gres_type=gres.split(":")[1], **{key: 2})
        )
        assert r.status_code == 201, r.json
        assert env.slurm.submitted[-1][2]["gres"] == gres


def test_one_kind_of_device_per_job(env: Env) -> None:
    r = env.api("alice").post("/api/v1/jobs", json=body(env, npus=1, xpus=1))
    assert r.status_code == 422, r.json
    assert set(r.json["errors"]["json"]) == {"npus", "xpus"}
    assert env.slurm.submitted == []


def test_held_cards_in_words(env: Env) -> None:
    from portal.jobs.words import resources

    tres = Tres.parse("cpu=2,node=1,gres/mlu=2,gres/mlu:mlu370=2")
    assert [(h.kind, h.type, h.count) for h in held(tres)] == [("mlu", "mlu370", 2)]
    with env.app.test_request_context(headers={"Accept-Language": "en"}):
        assert resources(Tres.parse("gres/xpu=1"))[0] == "1 Kunlunxin XPU card"
        assert resources(tres)[0] == "2 Cambricon MLU cards mlu370"
