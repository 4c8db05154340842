"""The image-understanding presets on the lab cluster, through the portal's API: each preset's
tiny random-weight model (same architecture, tests/presets/tiny_vision.py) in the portal's
offline mirror, imported, evaluated as a job (its task's metrics land on the version), served
as a replica job and called once through the portal.

All evaluations are submitted at once and waited for together, then all services, so the
module costs about one job start of each kind."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from flask.testing import FlaskClient

from portal.presets.catalog import get
from slurm_plugins.client import SlurmClient
from tests.integration.test_models_e2e import _poll, portal  # noqa: F401
from tests.presets.tiny_vision import BUILDERS

pytestmark = pytest.mark.slurm

# each task's headline metric, and the size of its bundled test set (data/vision)
METRIC = {
    "vit-base-classifier": ("accuracy", 6),
    "xray-pneumonia": ("f1", 4),
    "detr-detector": ("map", 4),
    "segformer-segmenter": ("miou", 4),
    "dpt-depth": ("abs_rel", 4),
}


def _image() -> str:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (48, 40), (230, 230, 230))
    ImageDraw.Draw(img).ellipse((8, 6, 30, 28), fill=(20, 40, 160))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def _fill(mirror: Path) -> None:
    """The tiny models where the real ones would be, readable by the jobs' users."""
    for name, build in BUILDERS.items():
        preset = get(name)
        assert preset is not None
        assert preset.mirror
        build(mirror / preset.mirror)
    for path in [mirror, *mirror.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_image_presets_import_evaluate_serve_and_answer(
    portal: tuple[FlaskClient, int],  # noqa: F811
    client: SlurmClient,
) -> None:
    api, project_id = portal
    _fill(Path(api.application.config["MODEL_MIRROR"]))
    versions: dict[str, dict[str, Any]] = {}
    for name in BUILDERS:
        r = api.post(f"/api/v1/presets/{name}/import", json={"project_id": project_id})
        assert r.status_code == 201, r.json
        model_id = r.json["id"]
        [v1] = api.get(f"/api/v1/models/{model_id}/versions").json
        r = api.post(f"/api/v1/models/{model_id}/versions/1/evaluations", json={})
        assert r.status_code == 201, r.json
        versions[name] = {**v1, "model_id": model_id}

    for name, v1 in versions.items():
        evaluations = f"/api/v1/models/{v1['model_id']}/versions/1/evaluations"
        [ev] = _poll(api, evaluations, lambda rows: rows[0]["state"] != "queued", 180)
        assert ev["state"] == "succeeded", (name, ev)
        metrics = api.get(f"/api/v1/models/{v1['model_id']}/versions/1").json["metrics"]
        key, samples = METRIC[name]
        assert metrics[key] >= 0, name
        assert metrics["samples"] == samples, name
        assert bool(ev["per_class"]) == (name != "dpt-depth"), name  # depth has no classes

    services = {}
    for name, v1 in versions.items():
        r = api.post("/api/v1/inference", json={"version_id": v1["id"], "allow_ips": ["127.0.0.1"]})
        assert r.status_code == 201, r.json
        services[name] = r.json
    image = _image()
    caller = api.application.test_client()  # no portal login: the service token only
    for name, svc in services.items():
        url = f"/api/v1/inference/{svc['id']}"
        ready = _poll(api, url, lambda s: s["ready_replicas"] == 1, 180)
        assert ready["ready_replicas"] == 1, (name, ready)
        r = caller.post(
            svc["url"], json={"image": image}, headers={"X-Service-Token": svc["token"]}
        )
        assert r.status_code == 200, (name, r.json)
        preset = get(name)
        assert preset is not None
        jsonschema.validate(r.json, preset.output)
        bad = caller.post(
            svc["url"], json={"image": "no image"}, headers={"X-Service-Token": svc["token"]}
        )
        assert bad.status_code == 422, (name, bad.json)
        assert api.post(f"{url}/stop").json["state"] == "stopped"
    for svc in services.values():
        url = f"/api/v1/inference/{svc['id']}"
        done = _poll(api, url, lambda s: s["replica_jobs"] == [], 30)
        assert done["replica_jobs"] == []
