"""Fine-tuning and evaluation as jobs: the specs submitted as the caller, and their output
(run here by the same program the job runs) turned into a version and an evaluation."""

from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from portal.presets import runtime
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_registry import reg  # noqa: F401 -- fixture
from tests.unit.portal.test_userdirs import run_dirs

# the jobs' files are written here by this process, standing in for the job's user
pytestmark = pytest.mark.usefixtures("users_own_files")


def set_job(env: Env, job_id: int, state: JobState) -> None:
    env.slurm._jobs[job_id] = dataclasses.replace(env.slurm._jobs[job_id], state=state)


def submitted(env: Env, job_id: int) -> tuple[str, str, dict[str, Any]]:
    return env.slurm.submitted[job_id - 1001]


def run_like_the_job(env: Env, job_id: int) -> None:
    """Run the submitted command's program in-process, as the job would on its node."""
    _, script, _ = submitted(env, job_id)
    line = next(x for x in script.splitlines() if x.startswith("AIPOOL_PROGRAM=("))
    words = shlex.split(line.removeprefix("AIPOOL_PROGRAM=(").removesuffix(")"))
    argv = words[words.index("portal.presets.runtime") + 1 :]
    runtime.main(argv)


def import_digits(env: Env, who: str = "alice", project: str = "nlp") -> int:
    r = env.api(who).post(
        "/api/v1/presets/digits-classifier/import", json={"project_id": env.world.projects[project]}
    )
    assert r.status_code == 201, r.json
    return int(r.json["id"])


def train(env: Env, model_id: int, who: str = "alice") -> dict[str, Any]:
    """Version 2, fine-tuned from version 1 by a job that ran to completion."""
    client = env.api(who)
    r = client.post(f"/api/v1/models/{model_id}/versions/1/fine-tune", json={"tags": {"run": "a"}})
    assert r.status_code == 201, r.json
    assert (r.json["status"], r.json["source"], r.json["number"]) == ("training", "job", 2)
    job_id = r.json["job_id"]
    user, _, props = submitted(env, job_id)
    assert (user, props["account"]) == (who, "nlp" if who == "alice" else props["account"])
    run_like_the_job(env, job_id)
    reconcile(env)
    assert client.get(f"/api/v1/models/{model_id}/versions/2").json["status"] == "training"
    set_job(env, job_id, JobState.COMPLETED)
    assert client.get(f"/api/v1/models/{model_id}/versions/2").json["status"] == "training"
    assert reconcile(env) == [f"version {r.json['id']}: job {job_id} COMPLETED: record its results"]
    v2: dict[str, Any] = client.get(f"/api/v1/models/{model_id}/versions/2").json
    return v2


def test_fine_tune_then_evaluate_and_compare(reg: Env) -> None:  # noqa: F811
    model_id = import_digits(reg)
    v2 = train(reg, model_id)
    assert v2["status"] == "ready"
    assert {f["path"] for f in v2["files"]} == {"config.json", "weights.npz"}
    assert v2["parameters"] == 10 * 64 + 10 + 10  # coef, intercept, classes
    assert v2["parent_id"] is not None
    assert v2["tags"] == {"run": "a"}

    alice = reg.api("alice")
    r = alice.post(f"/api/v1/models/{model_id}/versions/2/evaluations", json={})
    assert r.status_code == 201, r.json
    assert r.json["state"] == "queued"
    audit = reg.api("admin").get(f"/api/v1/audit?action=model.evaluate&target_id={model_id}").json
    assert [e["after"]["evaluation_id"] for e in audit] == [r.json["id"]]
    job_id = r.json["job_id"]
    run_like_the_job(reg, job_id)
    set_job(reg, job_id, JobState.COMPLETED)
    [ev] = alice.get(f"/api/v1/models/{model_id}/versions/2/evaluations").json
    assert ev["state"] == "queued"  # requests only read: the refresher records results
    reconcile(reg)
    [ev] = alice.get(f"/api/v1/models/{model_id}/versions/2/evaluations").json
    assert ev["state"] == "succeeded"
    assert set(ev["metrics"]) >= {"accuracy", "f1", "precision", "recall"}
    assert ev["metrics"]["accuracy"] > 0.9
    assert len(ev["per_class"]) == 10
    assert sum(map(sum, ev["confusion"])) == ev["metrics"]["samples"]
    version = alice.get(f"/api/v1/models/{model_id}/versions/2").json
    assert version["metrics"]["accuracy"] == ev["metrics"]["accuracy"]
    png = alice.get(ev["confusion_png"])
    assert png.data.startswith(b"\x89PNG")
    png.close()
    # a failed evaluation job is reported with its reason; nothing reaches the version
    r = alice.post(f"/api/v1/models/{model_id}/versions/2/evaluations", json={})
    set_job(reg, r.json["job_id"], JobState.FAILED)
    reconcile(reg)
    rows = alice.get(f"/api/v1/models/{model_id}/evaluations").json
    assert [(e["version"], e["state"]) for e in rows] == [(2, "succeeded"), (2, "failed")]
    assert f"Job {r.json['job_id']} failed." in rows[1]["message"]
    assert alice.get(f"/api/v1/models/{model_id}/versions/2").json["metrics"] == version["metrics"]
    # nothing to evaluate in a version that is still training or failed
    r = alice.post(f"/api/v1/models/{model_id}/versions/2/fine-tune", json={})
    set_job(reg, r.json["job_id"], JobState.FAILED)
    reconcile(reg)
    assert alice.get(f"/api/v1/models/{model_id}/versions/3").json["status"] == "failed"
    r = alice.post(f"/api/v1/models/{model_id}/versions/3/evaluations", json={})
    assert r.status_code == 409
    # deleting the model takes its files, plots and unfinished jobs' directories with it
    queued = alice.post(f"/api/v1/models/{model_id}/versions/2/evaluations", json={})
    assert queued.status_code == 201
    store = Path(reg.app.config["MODEL_STORAGE"])
    assert (store / "evaluations" / f"{ev['id']}.png").is_file()
    assert alice.delete(f"/api/v1/models/{model_id}").status_code == 204
    assert [p for p in store.rglob("*") if p.is_file()] == []
    assert run_dirs(Path(reg.app.config["MODEL_WORK"])) == []


def test_jobs_need_write_access_and_a_runnable_preset(reg: Env) -> None:  # noqa: F811
    model_id = import_digits(reg)
    alice = reg.api("alice")
    alice.post(
        f"/api/v1/models/{model_id}/shares",
        json={"grantee_kind": "user", "grantee_id": reg.world.users["bob"], "mode": "read"},
    )
    before = len(reg.slurm.submitted)
    bob = reg.api("bob")
    assert bob.post(f"/api/v1/models/{model_id}/versions/1/evaluations", json={}).status_code == 403
    assert bob.post(f"/api/v1/models/{model_id}/versions/1/fine-tune", json={}).status_code == 403
    assert (
        reg.api("tina").post(f"/api/v1/models/{model_id}/versions/1/fine-tune", json={}).status_code
        == 404
    )
    assert len(reg.slurm.submitted) == before
    plain = alice.post(
        "/api/v1/models", json={"project_id": reg.world.projects["nlp"], "name": "p"}
    )
    from tests.unit.portal.test_registry import targz, upload

    upload(alice, plain.json["id"], targz({"w.bin": b"x"}), "m.tar.gz")
    r = alice.post(f"/api/v1/models/{plain.json['id']}/versions/1/evaluations", json={})
    assert r.status_code == 409
    assert "a preset that runs here" in r.json["message"]
    # Slurm refusing the job leaves no version and no work directory behind
    reg.slurm.reject = "Invalid account"
    r = alice.post(f"/api/v1/models/{model_id}/versions/1/fine-tune", json={})
    assert r.status_code == 409
    assert len(alice.get(f"/api/v1/models/{model_id}/versions").json) == 1
    work = Path(reg.app.config["MODEL_WORK"])
    assert run_dirs(work) == []


def dataset_version(env: Env, path: Path, owner: str = "alice", project: str = "nlp") -> int:
    from portal.datasets.models import Dataset, DatasetVersion
    from portal.extensions import db

    with env.app.app_context():
        s = db.session
        ds = Dataset(
            project_id=env.world.projects[project], owner_id=env.world.users[owner], name="digits"
        )
        s.add(ds)
        s.flush()
        files = list(path.rglob("*.png"))
        row = DatasetVersion(
            dataset_id=ds.id,
            version=1,
            path=str(path),
            checksum="0" * 64,
            file_count=len(files),
            size_bytes=sum(f.stat().st_size for f in files),
            source="path",
        )
        s.add(row)
        s.commit()
        return row.id


def test_train_and_evaluate_on_a_dataset_version(reg: Env, tmp_path: Path) -> None:  # noqa: F811
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    folder = tmp_path / "digits-images"
    for i in range(30):
        label = folder / str(digits.target[i])
        label.mkdir(parents=True, exist_ok=True)
        pixels = (digits.images[i] * 255 / 16).astype("uint8")
        Image.fromarray(pixels, mode="L").save(label / f"{i}.png")
    dv = dataset_version(reg, folder)
    model_id = import_digits(reg)
    v2 = train(reg, model_id)
    alice = reg.api("alice")
    r = alice.post(
        f"/api/v1/models/{model_id}/versions/2/evaluations", json={"dataset_version_id": dv}
    )
    assert r.status_code == 201, r.json
    assert (r.json["dataset"], r.json["dataset_version_id"]) == (f"dataset version {dv}", dv)
    job_id = r.json["job_id"]
    _, script, _ = submitted(reg, job_id)
    assert f"AIPOOL_DATA_EVAL={folder}" in script  # mounted read-only by the job spec
    os.environ["AIPOOL_DATA_EVAL"] = str(folder)
    try:
        run_like_the_job(reg, job_id)
    finally:
        del os.environ["AIPOOL_DATA_EVAL"]
    set_job(reg, job_id, JobState.COMPLETED)
    reconcile(reg)
    [ev] = alice.get(f"/api/v1/models/{model_id}/versions/2/evaluations").json
    assert ev["metrics"]["samples"] == 30
    assert ev["metrics"]["accuracy"] > 0.8
    # lineage of a fine-tuned version to the dataset version it was trained on
    r = alice.post(
        f"/api/v1/models/{model_id}/versions/2/fine-tune", json={"dataset_version_id": dv}
    )
    assert r.json["dataset_version_id"] == dv
    assert f"AIPOOL_DATA_TRAIN={folder}" in submitted(reg, r.json["job_id"])[1]
    # a dataset version the caller cannot read is refused, nothing submitted
    theirs = dataset_version(reg, folder, owner="bob", project="vision")
    before = len(reg.slurm.submitted)
    r = alice.post(
        f"/api/v1/models/{model_id}/versions/2/evaluations", json={"dataset_version_id": theirs}
    )
    assert r.status_code == 422
    assert "dataset_version_id" in r.json["errors"]["json"]
    assert len(reg.slurm.submitted) == before
    assert v2["status"] == "ready"
