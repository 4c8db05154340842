"""Registered models, versions, aliases and shares; every call checks the caller's level on
the model (:mod:`portal.registry.access`) and records writes in the audit log."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from flask import current_app
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from jobspec.names import NAME_RULE, is_name
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.presets import texts
from portal.presets.catalog import get as get_preset
from portal.registry import cards, storage, words
from portal.registry.access import Level, crosses_tenants, require, visible_filter
from portal.registry.models import (
    ModelVersion,
    RegisteredModel,
    Source,
    VersionStatus,
    Visibility,
)
from portal.registry.workdirs import dataset_mount, remove_workdir
from portal.slurm import SlurmPort
from portal.tenancy.models import Project
from portal.tenancy.service import get_project


def audit_model(
    session: Session, access: Access, action: str, model: RegisteredModel, **kw: Any
) -> None:
    record(
        session,
        access.user,
        action,
        "model",
        model.id,
        domain_id=model.project.domain_id,
        **kw,
    )


# ---------------------------------------------------------------------- models
def models_query(access: Access, filters: Mapping[str, Any]) -> Select[Any]:
    stmt = (
        select(RegisteredModel)
        .join(Project, Project.id == RegisteredModel.project_id)
        .where(visible_filter(access))
        .order_by(RegisteredModel.id)
    )
    if filters.get("project_id"):
        stmt = stmt.where(RegisteredModel.project_id == filters["project_id"])
    if filters.get("task"):
        stmt = stmt.where(RegisteredModel.task == filters["task"])
    if filters.get("q"):
        stmt = stmt.where(RegisteredModel.name.contains(filters["q"], autoescape=True))
    return stmt


def get_model(
    session: Session, access: Access, model_id: int, need: Level = Level.READ
) -> tuple[RegisteredModel, Level]:
    model = session.get(RegisteredModel, model_id)
    return model, require(session, access, model, need)  # type: ignore[return-value]


def create_model(session: Session, access: Access, data: Mapping[str, Any]) -> RegisteredModel:
    project = get_project(session, access, data["project_id"], Perm.JOBS_SUBMIT)
    if not is_name(data["name"]):
        raise ValidationFailed({"name": [gettext(NAME_RULE)]})
    taken = session.scalar(
        select(RegisteredModel.id).where(
            RegisteredModel.project_id == project.id, RegisteredModel.name == data["name"]
        )
    )
    if taken:
        raise Conflict(
            gettext(
                "Project %(project)s already has a model named %(name)s.",
                project=project.name,
                name=data["name"],
            )
        )
    model = RegisteredModel(
        project_id=project.id,
        project=project,
        owner_id=access.user_id,
        name=data["name"],
        description=data.get("description", ""),
        task=data.get("task", ""),
        framework=data.get("framework", ""),
        visibility=data.get("visibility", Visibility.PRIVATE.value),
        preset=data.get("preset"),
    )
    session.add(model)
    session.flush()
    audit_model(session, access, "model.create", model, after=model.audit_view())
    return model


def level_to_update(data: Mapping[str, Any]) -> Level:
    """What a caller needs on a model to make these changes: its visibility is its admins'."""
    return Level.ADMIN if "visibility" in data else Level.WRITE


def model_etag_data(model: RegisteredModel) -> dict[str, Any]:
    """What a model's ETag is computed from: the fields its owners edit."""
    return {
        "id": model.id,
        "description": model.description,
        "task": model.task,
        "framework": model.framework,
        "visibility": model.visibility,
    }


def version_etag_data(version: ModelVersion) -> dict[str, Any]:
    """What a version's ETag is computed from: the fields its owners edit (its status also
    moves when the run that makes it ends)."""
    return {"id": version.id, "status": version.status, "tags": version.tags, "card": version.card}


def update_model(
    session: Session, access: Access, model_id: int, data: Mapping[str, Any]
) -> RegisteredModel:
    model, _ = get_model(session, access, model_id, level_to_update(data))
    before = model.audit_view()
    for key in ("description", "task", "framework", "visibility"):
        if key in data:
            setattr(model, key, data[key])
    session.flush()
    protect(session, model)
    audit_model(session, access, "model.update", model, before=before, after=model.audit_view())
    session.commit()
    return model


def delete_model(session: Session, access: Access, model_id: int) -> None:
    model, _ = get_model(session, access, model_id, Level.ADMIN)
    found = versions(session, model)
    _refuse_if_served(session, [v.id for v in found])
    leftovers = _leftovers(session, found)
    audit_model(session, access, "model.delete", model, before=model.audit_view())
    session.delete(model)
    session.commit()
    storage.remove(storage.root() / str(model_id))
    _remove(leftovers)


def _leftovers(session: Session, found: list[ModelVersion]) -> list[Path]:
    """Files that outlive the rows: evaluation plots, work directories of unfinished jobs."""
    from portal.registry.models import Evaluation

    ids = [v.id for v in found]
    rows = list(session.scalars(select(Evaluation).where(Evaluation.version_id.in_(ids))))
    paths = [storage.root() / "evaluations" / f"{e.id}.png" for e in rows]
    paths += [storage.root() / "evaluations" / str(e.id) for e in rows if e.plots]
    paths += [Path(e.workdir) for e in rows if e.workdir]
    paths += [Path(v.workdir) for v in found if v.workdir]
    return paths


def _remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_relative_to(storage.root()):  # an evaluation's image or other plots
            storage.remove(path)
        else:
            remove_workdir(str(path))


def _refuse_if_served(session: Session, version_ids: list[int]) -> None:
    from portal.inference.models import InferenceService, Replica, ServiceState

    served = session.scalar(
        select(InferenceService.name).where(
            InferenceService.version_id.in_(version_ids),
            InferenceService.state == ServiceState.RUNNING.value,
        )
    )
    if served:
        raise Conflict(
            gettext("Inference service %(name)s serves it: stop the service first.", name=served)
        )
    # a stopped or deleted service whose replicas the reconciler has not cancelled yet: its
    # row must outlive them, or they would run on with nobody to stop them
    stopping = session.scalar(
        select(InferenceService.name)
        .join(Replica, Replica.service_id == InferenceService.id)
        .where(InferenceService.version_id.in_(version_ids))
    )
    if stopping:
        raise Conflict(
            gettext(
                "The replicas of inference service %(name)s are still stopping. "
                "Try again in a moment.",
                name=stopping,
            )
        )


# ---------------------------------------------------------------------- versions
def versions(session: Session, model: RegisteredModel) -> list[ModelVersion]:
    return list(
        session.scalars(
            select(ModelVersion)
            .where(ModelVersion.model_id == model.id)
            .order_by(ModelVersion.number)
        )
    )


def get_version(
    session: Session, access: Access, model_id: int, number: int, need: Level = Level.READ
) -> ModelVersion:
    model, _ = get_model(session, access, model_id, need)
    version = session.scalar(
        select(ModelVersion).where(ModelVersion.model_id == model.id, ModelVersion.number == number)
    )
    if version is None:
        raise NotFound(
            gettext("Model %(name)s has no version %(number)d.", name=model.name, number=number)
        )
    return version


def version_by_id(session: Session, access: Access, version_id: int, need: Level) -> ModelVersion:
    version = session.get(ModelVersion, version_id)
    if version is None:
        raise NotFound(gettext("Model version not found."))
    require(session, access, version.model, need)
    return version


def _next_number(session: Session, model: RegisteredModel) -> int:
    top = session.scalar(
        select(func.max(ModelVersion.number)).where(ModelVersion.model_id == model.id)
    )
    return (top or 0) + 1


def new_version(
    session: Session,
    access: Access,
    model: RegisteredModel,
    staged: storage.Staged | None,
    **fields: Any,
) -> ModelVersion:
    """A version row and, when ``staged``, its artifacts moved into place; one transaction:
    on any failure the row is rolled back and the files are removed."""
    card = fields.pop("card", "") or ""
    meta = cards.check(card).meta if card else {}
    version = ModelVersion(
        model_id=model.id,
        number=_next_number(session, model),
        card=card,
        card_meta=meta,
        created_by=access.user_id,
        **fields,
    )
    if staged is not None:
        version.files = staged.files
        version.size_bytes = staged.size
        version.parameters = staged.parameters
        version.sha256 = staged.sha256
    final: Path | None = None
    try:
        session.add(version)
        session.flush()
        if staged is not None:
            final = storage.version_dir(model.id, version.number)
            version.storage = f"{model.id}/{version.number}"
            storage.place(staged, final)
            if crosses_tenants(session, model):
                storage.encrypt_dir(final, storage.tenant_key(model.project.domain_id))
                version.encrypted = True
        audit_model(
            session,
            access,
            "model.version.create",
            model,
            after={"number": version.number, "source": version.source, "sha256": version.sha256},
        )
        session.commit()
    except BaseException:
        session.rollback()
        if staged is not None:
            staged.discard()
        if final is not None:
            storage.remove(final)
        raise
    return version


def upload_version(
    session: Session,
    access: Access,
    model_id: int,
    *,
    stream: IO[bytes],
    filename: str,
    data: Mapping[str, Any],
    port: SlurmPort,
) -> ModelVersion:
    model, _ = get_model(session, access, model_id, Level.WRITE)
    if data.get("job_id") is not None:
        from portal.jobs.service import get_job

        try:
            get_job(session, access, port, data["job_id"])  # lineage names a job one may see
        except NotFound:
            message = gettext("No job of yours or of your projects has this number.")
            raise ValidationFailed({"job_id": [message]}) from None
    if data.get("card"):
        cards.check(data["card"])  # before the upload is written anywhere
    if data.get("dataset_version_id") is not None:
        dataset_mount(session, access, data["dataset_version_id"], "lineage")  # readable
    staged = storage.stage_upload(stream, filename)
    return new_version(
        session,
        access,
        model,
        staged,
        source=Source.UPLOAD.value,
        card=data.get("card", ""),
        tags=data.get("tags", {}),
        dataset_version_id=data.get("dataset_version_id"),
        job_id=data.get("job_id"),
    )


def _import_roots() -> list[Path]:
    roots = [Path(p).resolve() for p in current_app.config["MODEL_IMPORT_ROOTS"]]
    return [*roots, storage.mirror().resolve()]


def import_version(
    session: Session, access: Access, model_id: int, data: Mapping[str, Any]
) -> ModelVersion:
    """A Hugging Face (``config.json`` / ``README.md``) or ModelScope (``configuration.json``)
    directory under one of the import roots."""
    model, _ = get_model(session, access, model_id, Level.WRITE)
    path = Path(data["path"])
    if not path.is_absolute() or ".." in path.parts:
        raise ValidationFailed({"path": [gettext("Give an absolute path without “..”.")]})
    real = path.resolve()
    if not any(real.is_relative_to(r) for r in _import_roots()):
        message = gettext(
            "The directory is not under an import root (the site's mirror or MODEL_IMPORT_ROOTS)."
        )
        raise ValidationFailed({"path": [message]})
    if real.is_relative_to(storage.mirror().resolve()):
        if not real.is_dir():
            raise ValidationFailed({"path": [gettext("There is no such directory.")]})
        _layout(real)  # before a copy of what may be large
        staged = storage.stage_directory(real)  # the site's mirror: the portal's own
    else:
        # an import root users may write: read as the caller, by their own process
        try:
            staged = storage.stage_as(
                access.username, real, deref=True, empty=not_a_layout(),
                missing=gettext("There is no such directory."),
            )  # fmt: skip
        except Conflict as exc:
            raise ValidationFailed({"path": [exc.message]}) from None
    try:
        source, card = _layout(staged.path / "files")
    except BaseException:
        staged.discard()
        raise
    meta = cards.split(card).meta
    if not model.task and isinstance(meta.get("pipeline_tag"), str):
        model.task = meta["pipeline_tag"][:64]
    if not model.framework and isinstance(meta.get("library_name"), str):
        model.framework = meta["library_name"][:64]
    return new_version(
        session, access, model, staged, source=source.value, card=card, tags=data.get("tags", {})
    )


def not_a_layout() -> str:
    return gettext(
        "The directory is neither a Hugging Face (config.json) nor a ModelScope "
        "(configuration.json) layout."
    )


def _layout(files: Path) -> tuple[Source, str]:
    """Which hub's layout the staged files have, and their model card (checked)."""
    if (files / "configuration.json").is_file():
        source = Source.MODELSCOPE
    elif (files / "config.json").is_file() or (files / "README.md").is_file():
        source = Source.HUGGINGFACE
    else:
        raise ValidationFailed({"path": [not_a_layout()]})
    readme = files / "README.md"
    card = readme.read_text(errors="replace") if readme.is_file() else ""
    cards.check(card)
    return source, card


def import_preset(session: Session, access: Access, data: Mapping[str, Any]) -> ModelVersion:
    """A preset as a new model in a project: its card, schemas and configuration (version 1).
    Presets whose weights come from the mirror need them there."""
    import json

    preset = get_preset(data["preset"])
    if preset is None:
        raise NotFound(
            gettext("There is no preset named %(name)s (GET /api/v1/presets).", name=data["preset"])
        )
    if preset.mirror and not (storage.mirror() / preset.mirror).is_dir():
        if not access.platform_admin:  # the command is the operators'; a member asks them
            raise Conflict(
                gettext(
                    "The weights of %(name)s are not in this site's model mirror yet: ask an "
                    "administrator to mirror them.",
                    name=texts.title(preset),
                )
            )
        command = f"aipool models mirror fill {preset.name} --from huggingface"
        raise Conflict(
            gettext(
                "%(repo)s is not in the offline mirror %(mirror)s: the site fills it first, "
                "with %(command)s (or --from modelscope, or --from a directory).",
                repo=preset.mirror,
                mirror=storage.mirror(),
                command=command,
            )
        )
    model = create_model(
        session,
        access,
        {
            "project_id": data["project_id"],
            "name": data.get("name") or preset.name,
            "description": texts.summary(preset)[:1000],
            "task": preset.task,
            "framework": preset.framework,
            "preset": preset.name,
        },
    )
    config = {"preset": preset.name, **({"base": preset.mirror} if preset.mirror else {})}
    staged = storage.stage_files({"config.json": json.dumps(config, indent=2).encode()})
    return new_version(
        session,
        access,
        model,
        staged,
        source=Source.PRESET.value,
        card=preset.card(),
        input_schema=preset.input,
        output_schema=preset.output,
    )


def update_version(
    session: Session, access: Access, model_id: int, number: int, data: Mapping[str, Any]
) -> ModelVersion:
    version = get_version(session, access, model_id, number, Level.WRITE)
    before = {"status": version.status, "tags": dict(version.tags)}
    if "status" in data:
        if version.status in (VersionStatus.TRAINING, VersionStatus.FAILED):
            raise Conflict(
                gettext(
                    "Version %(number)d is %(status)s: its status cannot be changed.",
                    number=number,
                    status=words.status(version.status),
                )
            )
        version.status = data["status"]
    if "tags" in data:
        version.tags = {**version.tags, **data["tags"]}
        version.tags = {k: v for k, v in version.tags.items() if v is not None}
    if "card" in data:
        version.card_meta = cards.check(data["card"]).meta
        version.card = data["card"]
    audit_model(
        session,
        access,
        "model.version.update",
        version.model,
        before={"number": number, **before},
        after={"number": number, "status": version.status, "tags": dict(version.tags)},
    )
    session.commit()
    return version


def delete_version(session: Session, access: Access, model_id: int, number: int) -> None:
    version = get_version(session, access, model_id, number, Level.ADMIN)
    _refuse_if_served(session, [version.id])
    path = storage.root() / version.storage if version.storage else None
    leftovers = _leftovers(session, [version])
    audit_model(session, access, "model.version.delete", version.model, before={"number": number})
    session.delete(version)
    session.commit()
    if path is not None:
        storage.remove(path)
    _remove(leftovers)


def artifact(session: Session, access: Access, model_id: int, number: int, path: str) -> Path:
    version = get_version(session, access, model_id, number, Level.READ)
    if not any(f["path"] == path for f in version.files):
        raise NotFound(
            gettext("Version %(number)d has no file %(path)s.", number=number, path=path)
        )
    if version.encrypted:
        raise Conflict(
            gettext(
                "The files of a model shared across tenants are encrypted at rest and "
                "decrypted only for jobs: evaluate, fine-tune or deploy it instead."
            )
        )
    return storage.root() / version.storage / path


def protect(session: Session, model: RegisteredModel) -> None:
    """Encrypt the plain artifacts of a model that others outside its tenant can now reach
    (they stay encrypted if the share is later withdrawn)."""
    if not crosses_tenants(session, model):
        return
    key = storage.tenant_key(model.project.domain_id)
    for version in versions(session, model):
        if version.storage and not version.encrypted:
            storage.encrypt_dir(storage.root() / version.storage, key)
            version.encrypted = True
