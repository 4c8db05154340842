"""The Chinese understanding presets on the lab, through the portal's API: each is imported,
evaluated as a Slurm job (the runtime's program on a tiny random-weight model of its
architecture, from the offline mirror) and served as an inference service that answers one
request through the portal.

All four evaluations (and a fine-tune of the tagger) are submitted at once and waited for
together, then the four services: the module's time is about one job's start and run, twice.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from flask.testing import FlaskClient

from aipool.lab.cluster import Lab
from portal.presets.catalog import presets
from slurm_plugins.client import SlurmClient
from tests.integration.conftest import wait_until
from tests.integration.test_models_e2e import portal  # noqa: F401 -- fixture
from tests.presets.tiny_understanding import BUILDERS

pytestmark = pytest.mark.slurm

REQUESTS: dict[str, dict[str, Any]] = {
    "roberta-sentiment-zh": {"texts": ["物流很快，非常满意。"]},
    "bert-ner-zh": {"text": "李明昨天在北京参加了会议。"},
    "pert-qa-zh": {"question": "故宫旧称什么？", "context": "故宫是皇家宫殿，旧称紫禁城。"},
    "keybert-keywords": {"text": "人工智能正在改变医疗行业，深度学习辅助医生分析医学影像。"},
}
METRICS = {
    "roberta-sentiment-zh": {"accuracy", "f1", "precision", "recall", "samples"},
    "bert-ner-zh": {"accuracy", "f1", "precision", "recall", "samples"},
    "pert-qa-zh": {"exact_match", "f1", "samples"},
    "keybert-keywords": {"f1", "precision", "recall", "samples"},
}


@pytest.fixture
def mirror(lab: Lab) -> Path:
    """The tiny models in the mirror the ``portal`` fixture gives the portal (and removes)."""
    root = Path(lab.cfg.root) / f"model-mirror-{os.getpid()}"
    for build in BUILDERS.values():
        build(root)
    for path in [root, *root.rglob("*")]:  # the job's user reads them
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def _get(api: FlaskClient, url: str) -> Any:
    r = api.get(url)
    assert r.status_code == 200, r.json
    return r.json


def test_understanding_presets_import_evaluate_serve_and_answer(
    mirror: Path,
    portal: tuple[FlaskClient, int],  # noqa: F811
    client: SlurmClient,
) -> None:
    api, project_id = portal
    models: dict[str, int] = {}
    for name in BUILDERS:
        r = api.post(f"/api/v1/presets/{name}/import", json={"project_id": project_id})
        assert r.status_code == 201, r.json
        models[name] = r.json["id"]

    # every evaluation at once, of version 1: the mirror's weights, the bundled test set
    for name, model_id in models.items():
        r = api.post(f"/api/v1/models/{model_id}/versions/1/evaluations", json={})
        assert r.status_code == 201, (name, r.json)

    def evaluated() -> bool:
        return all(
            _get(api, f"/api/v1/models/{m}/versions/1/evaluations")[0]["state"] != "queued"
            for m in models.values()
        )

    # and, beside them, a fine-tune of the tagger on its bundled sentences: version 2
    tagger = models["bert-ner-zh"]
    r = api.post(f"/api/v1/models/{tagger}/versions/1/fine-tune", json={})
    assert r.status_code == 201, r.json

    def tuned() -> bool:
        return bool(_get(api, f"/api/v1/models/{tagger}/versions/2")["status"] != "training")

    wait_until(evaluated, 60, interval=0.5)
    wait_until(tuned, 30, interval=0.5)
    v2 = _get(api, f"/api/v1/models/{tagger}/versions/2")
    assert v2["status"] == "ready", v2
    assert "model.safetensors" in {f["path"] for f in v2["files"]}
    assert v2["parameters"] > 0
    for name, model_id in models.items():
        [ev] = _get(api, f"/api/v1/models/{model_id}/versions/1/evaluations")
        assert ev["state"] == "succeeded", (name, ev.get("message"))
        assert set(ev["metrics"]) == METRICS[name], name
        assert all(0 <= v <= 1 for k, v in ev["metrics"].items() if k != "samples")
        version = _get(api, f"/api/v1/models/{model_id}/versions/1")
        assert version["metrics"]["evaluation_id"] == ev["id"]

    # every service at once, one replica job each
    services: dict[str, tuple[str, str, str]] = {}
    for name, model_id in models.items():
        version = _get(api, f"/api/v1/models/{model_id}/versions/1")
        r = api.post(
            "/api/v1/inference", json={"version_id": version["id"], "allow_ips": ["127.0.0.1"]}
        )
        assert r.status_code == 201, (name, r.json)
        services[name] = (f"/api/v1/inference/{r.json['id']}", r.json["url"], r.json["token"])

    def ready() -> bool:
        return all(_get(api, url)["ready_replicas"] == 1 for url, _, _ in services.values())

    wait_until(ready, 60, interval=0.5)
    caller = api.application.test_client()  # the service token only, no portal login
    for name, (url, call, token) in services.items():
        r = caller.post(call, json=REQUESTS[name], headers={"X-Service-Token": token})
        assert r.status_code == 200, (name, r.json)
        jsonschema.validate(r.json, presets()[name].output)
        bad = caller.post(call, json={"nothing": 1}, headers={"X-Service-Token": token})
        assert bad.status_code == 422, (name, bad.json)
        assert api.post(f"{url}/stop").json["state"] == "stopped"
