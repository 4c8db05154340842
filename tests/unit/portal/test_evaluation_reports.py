"""An evaluation's report of any task, from the job's ``metrics.json`` through the refresher to
the API and the model's page in both languages: a detection report (mAP, a per-class table of
AP and support, no confusion matrix), a translation report (BLEU and chrF, no per-class
table), and reports that are not of the shape (the evaluation fails, nothing is stored)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask_babel import force_locale

from portal.extensions import db
from portal.i18n import gettext
from portal.presets import hubs
from portal.registry import reports, words
from portal.registry.models import Evaluation
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_model_pages import client_of
from tests.unit.portal.test_registry import reg
from tests.unit.portal.test_registry_runs import import_digits, set_job

__all__ = ["reg"]  # the fixture, used by name
pytestmark = pytest.mark.usefixtures("users_own_files")

DETECTION = {
    "task": "object-detection",
    "metrics": {"map": 0.41234, "map_50": 0.625, "map_75": 0.4, "samples": 50},
    "per_class": [
        {"label": "person", "ap": 0.55, "support": 1234},
        {"label": "bicycle", "ap": 0.25, "support": 12},
    ],
    "labels": [],
    "confusion": [],
}
TRANSLATION = {
    "task": "translation",
    "metrics": {"bleu": 27.5, "chrf": 55.25, "samples": 8},
    "per_class": [],
    "labels": [],
    "confusion": [],
}


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32  # the signature is what the refresher checks


def evaluate_with(
    env: Env, report: object, plots: dict[str, bytes] | None = None
) -> tuple[int, dict[str, Any]]:
    """A preset model evaluated by a job that wrote ``report`` (and ``plots``) and completed;
    the model's id and the evaluation as the API shows it."""
    model_id = import_digits(env)
    alice = env.api("alice")
    r = alice.post(f"/api/v1/models/{model_id}/versions/1/evaluations", json={})
    assert r.status_code == 201, r.json
    with env.app.app_context():
        row = db.session.get(Evaluation, r.json["id"])
        assert row is not None
        workdir = Path(row.workdir)
    (workdir / "metrics.json").write_text(json.dumps(report))
    for name, data in (plots or {}).items():
        (workdir / name).write_bytes(data)
    set_job(env, r.json["job_id"], JobState.COMPLETED)
    reconcile(env)
    [ev] = alice.get(f"/api/v1/models/{model_id}/versions/1/evaluations").json
    return model_id, ev


def in_language(env: Env, lang: str, text: str, **params: Any) -> str:
    with env.app.test_request_context(), force_locale("zh_CN" if lang == "zh" else "en"):
        return gettext(text, **params)


def metric_in(env: Env, lang: str, name: str) -> str:
    with env.app.test_request_context(), force_locale("zh_CN" if lang == "zh" else "en"):
        return words.metric(name)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_detection_report_reaches_the_version_and_its_page(reg: Env, lang: str) -> None:
    drawn = {"pr-curve.png": PNG, "Not a plot.png": PNG, "fake.png": b"GIF89a", "x.txt": PNG}
    model_id, ev = evaluate_with(reg, DETECTION, drawn)
    assert ev["state"] == "succeeded"
    assert ev["task"] == "object-detection"
    assert ev["metrics"] == DETECTION["metrics"]
    assert ev["per_class"] == DETECTION["per_class"]
    assert ev["confusion_png"] is None  # no plot for a task without a confusion matrix
    version = reg.api("alice").get(f"/api/v1/models/{model_id}/versions/1").json
    assert version["metrics_task"] == "object-detection"
    assert version["metrics"] == {**DETECTION["metrics"], "evaluation_id": ev["id"]}
    page = client_of(reg, "alice", lang).get(f"/models/{model_id}").get_data(as_text=True)
    for name in ("map", "map_50", "map_75"):
        assert f'<th scope="col">{metric_in(reg, lang, name)}</th>' in page
    assert metric_in(reg, "en", "map") == "Mean average precision (mAP)"
    tables = page[: page.index('class="per-class"')]  # the versions' and evaluations' tables
    assert metric_in(reg, lang, "accuracy") not in tables  # not this task's
    assert "0.4123" in page
    assert 'data-task="object-detection"' in page
    assert in_language(reg, lang, "Object detection") in page
    per_class = page[page.index('class="per-class"') :]
    head = f'<th scope="col">{metric_in(reg, lang, "ap")}</th>'
    assert head in per_class
    assert '<th scope="row">person</th><td>0.5500</td><td>1,234</td>' in per_class
    assert "/confusion.png" not in page
    # the other plots the job drew: PNGs with plain names only
    assert ev["plots"] == {"pr-curve.png": f"/api/v1/evaluations/{ev['id']}/plots/pr-curve.png"}
    assert f'href="{ev["plots"]["pr-curve.png"]}"' in page
    alice = reg.api("alice")
    shown = alice.get(ev["plots"]["pr-curve.png"])
    assert shown.data == PNG
    shown.close()
    assert alice.get(f"/api/v1/evaluations/{ev['id']}/plots/fake.png").status_code == 404
    assert reg.api("dave").get(ev["plots"]["pr-curve.png"]).status_code == 404  # another tenant
    kept = Path(reg.app.config["MODEL_STORAGE"]) / "evaluations" / str(ev["id"])
    assert sorted(p.name for p in kept.iterdir()) == ["pr-curve.png"]
    assert alice.delete(f"/api/v1/models/{model_id}").status_code == 204
    assert not kept.exists()  # the plots go with the model


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_translation_report_has_no_per_class_table(reg: Env, lang: str) -> None:
    model_id, ev = evaluate_with(reg, TRANSLATION)
    assert (ev["state"], ev["task"], ev["metrics"]) == (
        "succeeded",
        "translation",
        TRANSLATION["metrics"],
    )
    page = client_of(reg, "alice", lang).get(f"/models/{model_id}").get_data(as_text=True)
    assert f'<th scope="col">{metric_in(reg, lang, "bleu")}</th>' in page
    assert f'<th scope="col">{metric_in(reg, lang, "chrf")}</th>' in page
    assert metric_in(reg, "en", "chrf") == "Character n-gram F-score (chrF)"
    assert "27.5000" in page
    assert "55.2500" in page
    assert 'class="per-class"' not in page
    assert '<html lang="zh-CN">' in page if lang == "zh" else '<html lang="en">' in page


@pytest.mark.parametrize(
    "bad",
    [
        {"task": "translation", "metrics": {"bleu": "27.5"}},  # a number as text
        {"task": "translation", "metrics": {"bleu": float("nan")}},
        {"metrics": {"f1": 1.0}, "per_class": [{"precision": 1.0}]},  # a row without its label
        {"metrics": {"f1": 1.0}, "labels": ["a", "b"], "confusion": [[1, 2]]},  # not square
        {"per_class": []},  # no metrics
    ],
)
def test_a_report_not_of_the_shape_fails_the_evaluation(reg: Env, bad: dict[str, Any]) -> None:
    model_id, ev = evaluate_with(reg, bad)
    assert ev["state"] == "failed"
    assert ev["metrics"] == {}
    version = reg.api("alice").get(f"/api/v1/models/{model_id}/versions/1").json
    assert version["metrics"] == {}


def test_a_preset_imports_once_the_mirror_holds_its_weights(reg: Env, tmp_path: Path) -> None:
    alice = reg.api("alice")
    body = {"project_id": reg.world.projects["nlp"]}
    r = alice.post("/api/v1/presets/detr-detector/import", json=body)
    assert r.status_code == 409
    assert "ask an administrator" in r.json["message"]  # a member; the operator gets the command
    r = reg.api("admin").post("/api/v1/presets/detr-detector/import", json=body)
    assert r.status_code == 409
    assert "aipool models mirror fill detr-detector --from huggingface" in r.json["message"]
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "config.json").write_text('{"model_type": "detr"}')
    (snapshot / "model.safetensors").write_bytes(b"\0" * 64)
    hubs.fill(Path(reg.app.config["MODEL_MIRROR"]), "facebook/detr-resnet-50", str(snapshot))
    r = alice.post("/api/v1/presets/detr-detector/import", json=body)
    assert r.status_code == 201, r.json
    assert r.json["preset"] == "detr-detector"


def test_an_old_classification_report_still_reads() -> None:
    old = {
        "metrics": {"accuracy": 0.5, "samples": 4},
        "per_class": [{"label": 0, "precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}],
        "labels": ["0", "1"],
        "confusion": [[1, 1], [1, 1]],
    }
    report = reports.parse(old)
    assert report is not None
    assert report.task == ""
    assert report.per_class[0]["label"] == "0"
    assert reports.columns(report.per_class, ["precision", "recall", "f1", "support"]) == [
        "precision",
        "recall",
        "f1",
        "support",
    ]
    assert reports.ordered({"zeta", "bleu", "chrf"}, list(words.METRICS)) == [
        "bleu",
        "chrf",
        "zeta",
    ]
