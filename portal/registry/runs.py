"""Model jobs: fine-tuning and evaluation as Slurm jobs submitted as the caller, and the
bookkeeping that turns their output into versions and evaluations.

Each job gets a fresh directory with a random name under its user's own in ``MODEL_WORK``
(``portal.userdirs``: the user's and the portal's group's, nobody else's): the job reads its
model there (a copy; encrypted artifacts are decrypted only into such a directory, for a
caller already checked) and writes its output there. The runs refresher
(:mod:`portal.registry.refresh`, in the portal's control daemon) records what a finished job
left: a version's files, an evaluation's metrics.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import Session

from portal import actas, userdirs
from portal.authz import Access
from portal.errors import Conflict
from portal.i18n import gettext
from portal.jobs import service as jobs
from portal.presets.catalog import Preset
from portal.presets.catalog import get as get_preset
from portal.registry import storage, words
from portal.registry.access import Level
from portal.registry.models import (
    Evaluation,
    ModelVersion,
    RegisteredModel,
    Source,
    VersionStatus,
)
from portal.registry.service import audit_model, get_model, get_version, new_version
from portal.registry.workdirs import dataset_mount, new_workdir
from portal.slurm import SlurmPort


def stage_model(version: ModelVersion, dest: Path, owner: str, *, keep: bool = False) -> Path:
    """The version's files for one job of ``owner``'s, as a new directory ``dest`` that
    ``owner`` makes and fills (decrypted when encrypted at rest): the portal sends them as a
    tar stream to the as-the-user agent and never writes in the user's directory itself."""
    src = storage.root() / version.storage
    key = storage.tenant_key(version.model.project.domain_id) if version.encrypted else None
    try:
        actas.unpack(owner, str(dest), lambda out: storage.write_tar(src, version.files, key, out))
    except actas.AgentRefused as exc:
        if exc.kind == "exists" and keep:
            return dest  # a whole copy is there already (the agent renames only whole ones)
        if exc.kind == "exists":
            raise Conflict(gettext("%(path)s is there already.", path=dest.name)) from None
        raise actas.as_field_error(exc, owner, "model") from None
    return dest


def preset_of(model: RegisteredModel) -> Preset:
    preset = get_preset(model.preset or "")
    if preset is None or not preset.runnable:
        raise Conflict(
            gettext(
                "Model %(name)s has no job templates here: import a preset that runs here "
                "(GET /api/v1/presets?runnable=true).",
                name=model.name,
            )
        )
    return preset


def python() -> str:
    """The Python model jobs run: the job runtime's, which every user can run."""
    if configured := current_app.config["MODEL_PYTHON"]:
        return str(configured)
    if runtime := current_app.config["JOB_RUNTIME"]:
        return str(Path(runtime) / "bin" / "python")
    return sys.executable


def fill(template: Mapping[str, Any], values: Mapping[str, str], workdir: Path) -> dict[str, Any]:
    """A template's job spec with the portal's paths in place of ``{model}`` & co."""
    spec: dict[str, Any] = json.loads(json.dumps(template))
    spec["command"] = [str(w).format_map(values) for w in spec["command"]]
    spec["workdir"] = str(workdir)
    spec["outputs"] = str(workdir)
    return spec


def submit(
    session: Session, access: Access, port: SlurmPort, project_id: int, spec: dict[str, Any]
) -> int:
    """Submitted as the caller through the jobs service (quota, QOS, audit)."""
    return jobs.submit_spec(session, access, port, project_id, spec)


REPORT_MAX_BYTES = 16 * 1024**2  # a metrics.json
IMAGE_MAX_BYTES = 8 * 1024**2  # a confusion.png


# ---------------------------------------------------------------------- fine-tuning
def fine_tune(
    session: Session,
    access: Access,
    port: SlurmPort,
    model_id: int,
    *,
    number: int,
    data: Mapping[str, Any],
) -> ModelVersion:
    """A new version produced by a training job that starts from version ``number``."""
    base = get_version(session, access, model_id, number, Level.WRITE)
    preset = preset_of(base.model)
    workdir = new_workdir(access.username)
    try:
        stage_model(base, workdir / "base", access.username)
        spec = fill(
            preset.templates(python())["fine_tune"],
            {"model": str(workdir / "base"), "out": str(workdir), "mirror": str(storage.mirror())},
            workdir,
        )
        if data.get("resources"):
            spec["resources"] = {**spec["resources"], **data["resources"]}
        spec["mounts"] = dataset_mount(session, access, data.get("dataset_version_id"), "train")
        job_id = submit(session, access, port, base.model.project_id, spec)
    except BaseException:
        session.rollback()
        userdirs.remove_run(workdir)
        raise
    return new_version(
        session,
        access,
        base.model,
        None,
        source=Source.JOB.value,
        status=VersionStatus.TRAINING.value,
        card=base.card,
        input_schema=base.input_schema,
        output_schema=base.output_schema,
        parent_id=base.id,
        job_id=job_id,
        dataset_version_id=data.get("dataset_version_id"),
        workdir=str(workdir),
        tags=data.get("tags", {}),
    )


# ---------------------------------------------------------------------- evaluation
def evaluate(
    session: Session,
    access: Access,
    port: SlurmPort,
    model_id: int,
    *,
    number: int,
    data: Mapping[str, Any],
) -> Evaluation:
    version = get_version(session, access, model_id, number, Level.WRITE)
    if version.status in (VersionStatus.TRAINING, VersionStatus.FAILED) or not version.storage:
        raise Conflict(
            gettext(
                "Version %(number)d is %(status)s: there is nothing to evaluate yet.",
                number=number,
                status=words.status(version.status),
            )
        )
    preset = preset_of(version.model)
    workdir = new_workdir(access.username)
    try:
        stage_model(version, workdir / "model", access.username)
        spec = fill(
            preset.templates(python())["evaluate"],
            {"model": str(workdir / "model"), "out": str(workdir), "mirror": str(storage.mirror())},
            workdir,
        )
        dataset_version_id = data.get("dataset_version_id")
        spec["mounts"] = dataset_mount(session, access, dataset_version_id, "eval")
        job_id = submit(session, access, port, version.model.project_id, spec)
        default = (
            f"dataset version {dataset_version_id}"
            if dataset_version_id
            else f"preset:{preset.name}:test"
        )
        row = Evaluation(
            version_id=version.id,
            job_id=job_id,
            dataset=data.get("dataset") or default,
            dataset_version_id=data.get("dataset_version_id"),
            workdir=str(workdir),
            created_by=access.user_id,
        )
        session.add(row)
        session.flush()
        audit_model(
            session,
            access,
            "model.evaluate",
            version.model,
            after={"number": number, "evaluation_id": row.id, "job_id": job_id},
        )
        session.commit()
    except BaseException:
        session.rollback()
        userdirs.remove_run(workdir)
        raise
    return row


def evaluations(
    session: Session, access: Access, model_id: int, number: int | None
) -> list[tuple[int, Evaluation]]:
    """Evaluations of one version, or of every version (to compare them), newest last."""
    if number is not None:
        version = get_version(session, access, model_id, number, Level.READ)
        stmt = (
            select(ModelVersion.number, Evaluation)
            .join(ModelVersion, ModelVersion.id == Evaluation.version_id)
            .where(Evaluation.version_id == version.id)
        )
    else:
        model, _ = get_model(session, access, model_id, Level.READ)
        stmt = (
            select(ModelVersion.number, Evaluation)
            .join(ModelVersion, ModelVersion.id == Evaluation.version_id)
            .where(ModelVersion.model_id == model.id)
        )
    return [(int(n), e) for n, e in session.execute(stmt.order_by(Evaluation.id))]


def confusion_png(session: Session, access: Access, evaluation_id: int) -> Path:
    from portal.errors import NotFound
    from portal.registry.access import require

    row = session.get(Evaluation, evaluation_id)
    version = session.get(ModelVersion, row.version_id) if row else None
    if row is None or version is None:
        raise NotFound(gettext("Evaluation not found."))
    require(session, access, version.model, Level.READ)
    path = storage.root() / "evaluations" / f"{row.id}.png"
    if not path.is_file():
        raise NotFound(gettext("The evaluation has no confusion matrix (yet)."))
    return path


def plot_png(session: Session, access: Access, evaluation_id: int, name: str) -> Path:
    """One of the other plots an evaluation kept (its name as the evaluation lists it)."""
    from portal.errors import NotFound
    from portal.registry.access import require

    row = session.get(Evaluation, evaluation_id)
    version = session.get(ModelVersion, row.version_id) if row else None
    if row is None or version is None:
        raise NotFound(gettext("Evaluation not found."))
    require(session, access, version.model, Level.READ)
    path = storage.root() / "evaluations" / str(row.id) / name
    if name not in row.plots or not path.is_file():
        raise NotFound(gettext("The evaluation has no plot named %(name)s.", name=name))
    return path
