"""API: registered models, versions, aliases, shares, evaluations and presets."""

from __future__ import annotations

from typing import Any

from flask import Response, send_file
from sqlalchemy import func, select

from portal.errors import NotFound
from portal.i18n import gettext
from portal.identity.models import User
from portal.pagination import PageParams, page_of_query
from portal.presets.catalog import get as get_preset
from portal.presets.catalog import presets
from portal.registry import runs, schemas, service, sharing
from portal.registry.access import Level, level
from portal.registry.models import Evaluation, ModelVersion, RegisteredModel
from portal.registry.runs import python
from portal.slurm import slurm
from portal.web import AuthedView, Blueprint, current_access, locked, session

blp = Blueprint("models", __name__, url_prefix="/api/v1", description="Model registry")


def model_data(model: RegisteredModel, lvl: Level | None = None) -> dict[str, Any]:
    s = session()
    owner = s.get(User, model.owner_id) if model.owner_id else None
    count = s.scalar(select(func.count()).where(ModelVersion.model_id == model.id)) or 0
    return {
        "id": model.id,
        "project_id": model.project_id,
        "owner": owner.username if owner else None,
        "name": model.name,
        "description": model.description,
        "task": model.task,
        "framework": model.framework,
        "visibility": model.visibility,
        "preset": model.preset,
        "access": (lvl or level(s, current_access(), model)).name.lower(),
        "versions": count,
        "aliases": sharing.aliases(s, model),
        "created_at": model.created_at,
        "updated_at": model.updated_at,
    }


def evaluation_data(number: int, row: Evaluation) -> dict[str, Any]:
    has_png = row.state == "succeeded" and bool(row.labels)  # classification's plot only
    return {
        "id": row.id,
        "version": number,
        "job_id": row.job_id,
        "state": row.state,
        "dataset": row.dataset,
        "dataset_version_id": row.dataset_version_id,
        "task": row.task,
        "metrics": row.metrics,
        "per_class": row.per_class,
        "labels": row.labels,
        "confusion": row.confusion,
        "confusion_png": f"/api/v1/evaluations/{row.id}/confusion.png" if has_png else None,
        "plots": {name: f"/api/v1/evaluations/{row.id}/plots/{name}" for name in row.plots},
        "message": row.message,
        "created_at": row.created_at,
        "finished_at": row.finished_at,
    }


def _version(model_id: int, number: int) -> ModelVersion:
    return service.get_version(session(), current_access(), model_id, number)


@blp.route("/models")
class Models(AuthedView):
    @blp.arguments(schemas.ModelQuerySchema, location="query")
    @blp.response(200, schemas.ModelSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[dict[str, Any]]:
        """Models the caller may see: own, project, domain, public and shared with them."""
        stmt = service.models_query(current_access(), args)
        return [model_data(m) for m in page_of_query(session(), stmt, pagination_parameters)]

    @blp.arguments(schemas.ModelCreateSchema)
    @blp.response(201, schemas.ModelSchema)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        model = service.create_model(session(), current_access(), args)
        session().commit()
        return model_data(model, Level.ADMIN)


@blp.route("/models/<id:model_id>")
class ModelById(AuthedView):
    @blp.etag
    @blp.response(200, schemas.ModelSchema)
    def get(self, model_id: int) -> dict[str, Any]:
        """A model; its ETag is that of the fields its owners edit."""
        model, lvl = service.get_model(session(), current_access(), model_id)
        blp.set_etag(service.model_etag_data(model))
        return model_data(model, lvl)

    @blp.etag
    @blp.arguments(schemas.ModelUpdateSchema)
    @blp.response(200, schemas.ModelSchema)
    def patch(self, args: dict[str, Any], model_id: int) -> dict[str, Any]:
        """Description, task, framework; visibility (the model's admins). With ``If-Match``,
        a model changed since that ETag is 412 and nothing changes."""
        _check_model(model_id, service.level_to_update(args))
        model = service.update_model(session(), current_access(), model_id, args)
        blp.set_etag(service.model_etag_data(model))
        return model_data(model)

    @blp.etag
    @blp.response(204)
    def delete(self, model_id: int) -> None:
        """Delete the model and its versions (its admins); ``If-Match`` as for PATCH."""
        _check_model(model_id, Level.ADMIN)
        service.delete_model(session(), current_access(), model_id)


def _check_model(model_id: int, need: Level) -> None:
    model, _ = service.get_model(session(), current_access(), model_id, need)
    blp.check_etag(service.model_etag_data(locked(model)))


@blp.route("/models/<id:model_id>/versions")
class Versions(AuthedView):
    @blp.response(200, schemas.ModelVersionSchema(many=True))
    def get(self, model_id: int) -> list[ModelVersion]:
        model, _ = service.get_model(session(), current_access(), model_id)
        return service.versions(session(), model)

    @blp.arguments(schemas.ModelUploadFormSchema, location="form")
    @blp.arguments(schemas.ModelUploadFileSchema, location="files")
    @blp.response(201, schemas.ModelVersionSchema)
    def post(self, form: dict[str, Any], files: dict[str, Any], model_id: int) -> ModelVersion:
        """Upload a version: one file, or a .tar(.gz) / .zip archive of a model directory."""
        upload = files["file"]
        return service.upload_version(
            session(),
            current_access(),
            model_id,
            stream=upload.stream,
            filename=upload.filename or "",
            data=form,
            port=slurm(),
        )


@blp.route("/models/<id:model_id>/versions/import")
class ImportVersion(AuthedView):
    @blp.arguments(schemas.ModelImportSchema)
    @blp.response(201, schemas.ModelVersionSchema)
    def post(self, args: dict[str, Any], model_id: int) -> ModelVersion:
        """Import a Hugging Face or ModelScope model directory from an import root.

        Tag keys are 1-64 characters (``propertyNames``); another key is 422."""
        return service.import_version(session(), current_access(), model_id, args)


@blp.route("/models/<id:model_id>/versions/<id:number>")
class VersionByNumber(AuthedView):
    @blp.etag
    @blp.response(200, schemas.ModelVersionSchema)
    def get(self, model_id: int, number: int) -> ModelVersion:
        """A version; its ETag is that of its status, tags and card."""
        version = _version(model_id, number)
        blp.set_etag(service.version_etag_data(version))
        return version

    @blp.etag
    @blp.arguments(schemas.ModelVersionUpdateSchema)
    @blp.response(200, schemas.ModelVersionSchema)
    def patch(self, args: dict[str, Any], model_id: int, number: int) -> ModelVersion:
        """Status (ready, staging, production, archived), tags, model card. With
        ``If-Match``, a version changed since that ETag is 412 and nothing changes.

        Tag keys are 1-64 characters (``propertyNames``); another key is 422."""
        _check_version(model_id, number, Level.WRITE)
        version = service.update_version(session(), current_access(), model_id, number, args)
        blp.set_etag(service.version_etag_data(version))
        return version

    @blp.etag
    @blp.response(204)
    def delete(self, model_id: int, number: int) -> None:
        """Delete the version (the model's admins); ``If-Match`` as for PATCH."""
        _check_version(model_id, number, Level.ADMIN)
        service.delete_version(session(), current_access(), model_id, number)


def _check_version(model_id: int, number: int, need: Level) -> None:
    version = service.get_version(session(), current_access(), model_id, number, need)
    blp.check_etag(service.version_etag_data(locked(version)))


@blp.route("/models/<id:model_id>/versions/<id:number>/card")
class VersionCard(AuthedView):
    @blp.response(200, {"type": "string"}, content_type="text/html")
    def get(self, model_id: int, number: int) -> Response:
        """The model card as sanitised HTML."""
        from portal.registry.cards import render

        version = service.get_version(session(), current_access(), model_id, number)
        return Response(render(version.card), mimetype="text/html")


@blp.route("/models/<id:model_id>/versions/<id:number>/files/<path:path>")
class VersionFile(AuthedView):
    @blp.response(
        200, {"type": "string", "format": "binary"}, content_type="application/octet-stream"
    )
    def get(self, model_id: int, number: int, path: str) -> Response:
        """One artifact file (plain versions; encrypted ones are used by jobs only)."""
        file = service.artifact(session(), current_access(), model_id, number, path)
        return send_file(file, as_attachment=True, download_name=file.name)


@blp.route("/models/<id:model_id>/versions/<id:number>/fine-tune")
class FineTune(AuthedView):
    @blp.arguments(schemas.ModelFineTuneSchema)
    @blp.response(201, schemas.ModelVersionSchema)
    def post(self, args: dict[str, Any], model_id: int, number: int) -> ModelVersion:
        """Fine-tune as a Slurm job (as the caller): a new version, ready when the job ends.

        Tag keys are 1-64 characters (``propertyNames``); another key is 422."""
        return runs.fine_tune(
            session(), current_access(), slurm(), model_id, number=number, data=args
        )


@blp.route("/models/<id:model_id>/versions/<id:number>/evaluations")
class VersionEvaluations(AuthedView):
    @blp.response(200, schemas.ModelEvaluationSchema(many=True))
    def get(self, model_id: int, number: int) -> list[dict[str, Any]]:
        rows = runs.evaluations(session(), current_access(), model_id, number)
        return [evaluation_data(n, e) for n, e in rows]

    @blp.arguments(schemas.ModelEvaluateSchema)
    @blp.response(201, schemas.ModelEvaluationSchema)
    def post(self, args: dict[str, Any], model_id: int, number: int) -> dict[str, Any]:
        """Evaluate as a Slurm job: accuracy, F1, precision, recall, per class, confusion."""
        row = runs.evaluate(
            session(), current_access(), slurm(), model_id, number=number, data=args
        )
        return evaluation_data(number, row)


@blp.route("/models/<id:model_id>/evaluations")
class ModelEvaluations(AuthedView):
    @blp.response(200, schemas.ModelEvaluationSchema(many=True))
    def get(self, model_id: int) -> list[dict[str, Any]]:
        """Every version's evaluations, to compare versions."""
        rows = runs.evaluations(session(), current_access(), model_id, None)
        return [evaluation_data(n, e) for n, e in rows]


@blp.route("/evaluations/<id:evaluation_id>/confusion.png")
class ConfusionPng(AuthedView):
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="image/png")
    def get(self, evaluation_id: int) -> Response:
        path = runs.confusion_png(session(), current_access(), evaluation_id)
        return send_file(path, mimetype="image/png")


@blp.route("/evaluations/<id:evaluation_id>/plots/<string:name>")
class PlotPng(AuthedView):
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="image/png")
    def get(self, evaluation_id: int, name: str) -> Response:
        """Another plot the evaluation job drew (its task's: PR curves, sample outputs, …)."""
        path = runs.plot_png(session(), current_access(), evaluation_id, name)
        return send_file(path, mimetype="image/png")


@blp.route("/models/<id:model_id>/aliases/<name:alias>")
class Alias(AuthedView):
    @blp.response(200, schemas.ModelVersionSchema)
    def get(self, model_id: int, alias: str) -> ModelVersion:
        return sharing.resolve_alias(session(), current_access(), model_id, alias)

    @blp.arguments(schemas.ModelAliasSchema)
    @blp.response(200, schemas.ModelVersionSchema)
    def put(self, args: dict[str, Any], model_id: int, alias: str) -> ModelVersion:
        return sharing.set_alias(session(), current_access(), model_id, alias, args["version"])

    @blp.response(204)
    def delete(self, model_id: int, alias: str) -> None:
        sharing.delete_alias(session(), current_access(), model_id, alias)


@blp.route("/models/<id:model_id>/shares")
class Shares(AuthedView):
    @blp.response(200, schemas.ModelShareSchema(many=True))
    def get(self, model_id: int) -> list[Any]:
        return sharing.shares(session(), current_access(), model_id)

    @blp.arguments(schemas.ModelShareCreateSchema)
    @blp.response(201, schemas.ModelShareSchema)
    def post(self, args: dict[str, Any], model_id: int) -> Any:
        """Share with a user, a project or another tenant, read or write, until an expiry."""
        return sharing.share(session(), current_access(), model_id, args)


@blp.route("/models/<id:model_id>/shares/<id:share_id>")
class ShareById(AuthedView):
    @blp.response(204)
    def delete(self, model_id: int, share_id: int) -> None:
        sharing.unshare(session(), current_access(), model_id, share_id)


@blp.route("/presets")
class Presets(AuthedView):
    @blp.arguments(schemas.PresetQuerySchema, location="query")
    @blp.response(200, schemas.PresetSchema(many=True))
    def get(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """The 20 preset models (10 image, 10 language)."""
        found = list(presets().values())
        if "modality" in args:
            found = [p for p in found if p.modality == args["modality"]]
        if "runnable" in args:
            found = [p for p in found if p.runnable == args["runnable"]]
        return [p.describe() for p in found]


@blp.route("/presets/<string:name>")
class PresetByName(AuthedView):
    @blp.response(200, schemas.PresetSchema)
    def get(self, name: str) -> dict[str, Any]:
        preset = get_preset(name)
        if preset is None:
            raise NotFound(gettext("There is no preset named %(name)s.", name=name))
        return {**preset.describe(), "card": preset.card(), "templates": preset.templates(python())}


@blp.route("/presets/<string:name>/import")
class PresetImport(AuthedView):
    @blp.arguments(schemas.PresetImportSchema)
    @blp.response(201, schemas.ModelSchema)
    def post(self, args: dict[str, Any], name: str) -> dict[str, Any]:
        """A preset as a new model in a project (version 1: card, schemas, configuration)."""
        version = service.import_preset(session(), current_access(), {**args, "preset": name})
        return model_data(version.model, Level.ADMIN)
