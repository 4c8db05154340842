"""The image generation and restoration presets on the lab cluster, through the portal's API:
import each from the offline mirror (tiny random-weight models of the real architectures, and a
tiny CLIP for the CLIP score), evaluate every one as a job at once, serve every one at once, and
call each service once. The jobs run the real job templates from the job runtime."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from PIL import Image

from aipool.lab.cluster import Lab
from portal.presets import imaging
from portal.presets.inpainting import centre_mask
from slurm_plugins.client import SlurmClient
from tests.integration.conftest import wait_until
from tests.integration.test_models_e2e import portal  # noqa: F401 -- fixture
from tests.presets import tiny_imagegen

pytestmark = pytest.mark.slurm

PRESETS = ("swin2sr-superres", "sd-inpainting", "sd-text-to-image", "sd-style-transfer")
# what each evaluation reports (besides latency_ms and samples)
METRICS = {
    "swin2sr-superres": {"psnr", "ssim"},
    "sd-inpainting": {"psnr", "ssim"},
    "sd-text-to-image": {"clip_score"},
    "sd-style-transfer": {"ssim", "clip_score"},
}


def _image(size: tuple[int, int], colour: tuple[int, int, int]) -> str:
    return imaging.encode(Image.new("RGB", size, colour))


REQUESTS: dict[str, tuple[dict[str, Any], tuple[int, int]]] = {
    "swin2sr-superres": ({"image": _image((24, 16), (200, 40, 40))}, (48, 32)),
    "sd-inpainting": (
        {
            "image": _image((40, 24), (20, 160, 20)),
            "mask": imaging.encode(centre_mask((40, 24))),
            "prompt": "a red house",
            "steps": 2,
        },
        (40, 24),
    ),
    "sd-text-to-image": ({"prompt": "a photo of a cat", "steps": 2, "seed": 3}, (32, 32)),
    "sd-style-transfer": (
        {"image": _image((30, 20), (30, 30, 200)), "style": "a painting", "steps": 2},
        (30, 20),
    ),
}


def _all(http: FlaskClient, urls: dict[str, str], done: Any, timeout: float) -> dict[str, Any]:
    """Poll every URL until ``done`` holds for each answer; the last answers."""
    seen: dict[str, Any] = {}

    def check() -> bool:
        for name, url in urls.items():
            r = http.get(url)
            assert r.status_code == 200, r.json
            seen[name] = r.json
        return all(done(body) for body in seen.values())

    wait_until(check, timeout, interval=0.5)
    return seen


def test_image_generation_presets_evaluate_and_serve_as_jobs(
    portal: tuple[FlaskClient, int],  # noqa: F811
    client: SlurmClient,
    lab: Lab,
) -> None:
    api, project_id = portal
    mirror = Path(lab.cfg.root) / f"model-mirror-{os.getpid()}"  # the fixture's mirror
    for name in PRESETS:
        tiny_imagegen.BUILDERS[name](mirror)
    tiny_imagegen.clip(mirror)
    for path in (mirror, *mirror.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)

    models: dict[str, int] = {}
    for name in PRESETS:
        r = api.post(f"/api/v1/presets/{name}/import", json={"project_id": project_id})
        assert r.status_code == 201, r.json
        models[name] = r.json["id"]

    # every evaluation at once; they land on version 1
    evaluations = {}
    for name, model_id in models.items():
        r = api.post(f"/api/v1/models/{model_id}/versions/1/evaluations", json={})
        assert r.status_code == 201, r.json
        evaluations[name] = f"/api/v1/models/{model_id}/versions/1/evaluations"
    # generous: on CI's two cores, beside another lab, the jobs take turns on the CPUs
    done = _all(api, evaluations, lambda rows: rows[0]["state"] != "queued", 300)
    for name, [ev] in done.items():
        assert ev["state"] == "succeeded", (name, ev["message"])
        assert set(ev["metrics"]) == {*METRICS[name], "latency_ms", "samples"}, name
        assert ev["metrics"]["samples"] == 4
        version = api.get(f"/api/v1/models/{models[name]}/versions/1").json
        assert version["metrics"]["evaluation_id"] == ev["id"]
    assert [r["label"] for r in done["sd-inpainting"][0]["per_class"]] == ["outside", "inside"]
    assert 0 < done["swin2sr-superres"][0]["metrics"]["psnr"] < 100

    # every service at once; one call each
    services = {}
    for name, model_id in models.items():
        version_id = api.get(f"/api/v1/models/{model_id}/versions/1").json["id"]
        r = api.post(
            "/api/v1/inference", json={"version_id": version_id, "allow_ips": ["127.0.0.1"]}
        )
        assert r.status_code == 201, r.json
        services[name] = r.json
    urls = {name: f"/api/v1/inference/{svc['id']}" for name, svc in services.items()}
    _all(api, urls, lambda s: s["ready_replicas"] == 1, 240)
    caller = api.application.test_client()  # the service token only
    for name, svc in services.items():
        body, size = REQUESTS[name]
        r = caller.post(svc["url"], json=body, headers={"X-Service-Token": svc["token"]})
        assert r.status_code == 200, (name, r.json)
        with Image.open(io.BytesIO(base64.b64decode(r.json["image"]))) as out:
            assert (out.format, out.size) == ("PNG", size), name
    bad = caller.post(
        services["sd-text-to-image"]["url"],
        json={"prompt": ""},
        headers={"X-Service-Token": services["sd-text-to-image"]["token"]},
    )
    assert bad.status_code == 422
    assert "prompt" in bad.json["message"]

    for url in urls.values():
        assert api.post(f"{url}/stop").json["state"] == "stopped"
    _all(api, urls, lambda s: s["replica_jobs"] == [], 30)
