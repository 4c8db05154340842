"""The language generation presets on the lab cluster, through the portal's API: each imported
from a mirror that holds a tiny random-weight model of its architecture, evaluated as a Slurm
job (the report lands on the version), served by a replica job, and asked once through the
service's URL; one is also fine-tuned as a job into a safetensors version. The jobs of a step
are submitted together and waited for together."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from tests.integration.test_models_e2e import _poll, portal  # noqa: F401 -- fixture
from tests.presets.tiny_textgen import BUILDERS

METRICS = {
    "opus-mt-zh-en": {"bleu", "chrf", "samples"},
    "mt5-summariser": {"rouge1", "rouge2", "rougeL", "samples"},
    "qwen-chat": {"perplexity", "samples"},
    "gpt2-chinese": {"perplexity", "samples"},
}
REQUESTS: dict[str, tuple[dict[str, Any], str]] = {
    "opus-mt-zh-en": ({"text": "今天天气很好。", "max_new_tokens": 4}, "translation"),
    "mt5-summariser": ({"text": "冷空气来袭，周末气温将下降。"}, "summary"),
    "qwen-chat": ({"messages": [{"role": "user", "content": "你好"}]}, "reply"),
    "gpt2-chinese": ({"prompt": "今天", "max_new_tokens": 4}, "text"),
}


def _fill_mirror(lab: Lab) -> None:
    """The tiny models in the fixture's mirror, readable by the job's user."""
    mirror = Path(lab.cfg.root) / f"model-mirror-{os.getpid()}"
    for build in BUILDERS.values():
        build(mirror)
    for org in ("Helsinki-NLP", "csebuetnlp", "Qwen", "uer"):
        for path in [mirror / org, *(mirror / org).rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_generation_presets_evaluated_and_served_as_jobs(
    portal: tuple[FlaskClient, int],  # noqa: F811
    lab: Lab,
    client: SlurmClient,
) -> None:
    api, project_id = portal
    _fill_mirror(lab)
    models: dict[str, int] = {}
    for name in BUILDERS:
        r = api.post(f"/api/v1/presets/{name}/import", json={"project_id": project_id})
        assert r.status_code == 201, r.json
        models[name] = r.json["id"]

    # every evaluation at once, and one fine-tune beside them; then wait for them together
    for name, model_id in models.items():
        r = api.post(f"/api/v1/models/{model_id}/versions/1/evaluations", json={})
        assert r.status_code == 201, (name, r.json)
    tuned = models["gpt2-chinese"]
    r = api.post(f"/api/v1/models/{tuned}/versions/1/fine-tune", json={})
    assert r.status_code == 201, r.json
    for name, model_id in models.items():
        url = f"/api/v1/models/{model_id}/versions/1/evaluations"
        [ev] = _poll(api, url, lambda rows: rows[0]["state"] != "queued", 180)
        assert ev["state"] == "succeeded", (name, ev)
        assert set(ev["metrics"]) == METRICS[name], name
        version = api.get(f"/api/v1/models/{model_id}/versions/1").json
        assert version["metrics"]["samples"] == ev["metrics"]["samples"] > 0

    v2 = _poll(api, f"/api/v1/models/{tuned}/versions/2", lambda v: v["status"] != "training", 180)
    assert v2["status"] == "ready", v2
    files = {f["path"] for f in v2["files"]}
    assert {"model.safetensors", "config.json", "aipool.json", "tokenizer.json"} <= files
    assert v2["parameters"] > 0

    # one service each (the fine-tuned version where there is one), all replicas at once;
    # one call each through the portal
    services: dict[str, dict[str, Any]] = {}
    for name, model_id in models.items():
        number = 2 if model_id == tuned else 1
        version = api.get(f"/api/v1/models/{model_id}/versions/{number}").json
        body = {"version_id": version["id"], "allow_ips": ["127.0.0.1"]}
        r = api.post("/api/v1/inference", json=body)
        assert r.status_code == 201, (name, r.json)
        services[name] = r.json
    caller = api.application.test_client()  # no portal login: the service token only
    for name, svc in services.items():
        _poll(api, f"/api/v1/inference/{svc['id']}", lambda s: s["ready_replicas"] == 1, 180)
        body, field = REQUESTS[name]
        r = caller.post(svc["url"], json=body, headers={"X-Service-Token": svc["token"]})
        assert r.status_code == 200, (name, r.json)
        assert isinstance(r.json[field], str), name
        bad = caller.post(svc["url"], json={}, headers={"X-Service-Token": svc["token"]})
        assert bad.status_code == 422, (name, bad.json)
    for svc in services.values():
        assert api.post(f"/api/v1/inference/{svc['id']}/stop").json["state"] == "stopped"
