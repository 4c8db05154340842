"""API: label sets, labelling tasks, annotations, review and export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Response, send_file, url_for

from portal.datasets.models import DatasetVersion
from portal.datasets.preview import media_type
from portal.datasets.schemas import VersionSchema
from portal.datasets.service import Settings
from portal.errors import NotFound
from portal.i18n import gettext
from portal.labelling import service
from portal.labelling.formats import Format
from portal.labelling.models import LabelItem, LabelSet, LabelTask
from portal.labelling.schemas import (
    AnnotationsSchema,
    ExportQuerySchema,
    ExportVersionSchema,
    ItemDetailSchema,
    ItemSchema,
    ItemsQuerySchema,
    LabelSetSchema,
    LabelSetUpdateSchema,
    ProgressSchema,
    ProjectQuerySchema,
    ReviewSchema,
    TaskSchema,
)
from portal.pagination import PageParams, page_of_query
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("labelling", __name__, url_prefix="/api/v1/labelling", description="Labelling")


@blp.route("/label-sets")
class LabelSets(AuthedView):
    @blp.arguments(ProjectQuerySchema, location="query")
    @blp.response(200, LabelSetSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[LabelSet]:
        stmt = service.label_sets_query(current_access(), args.get("project_id"))
        return page_of_query(session(), stmt, pagination_parameters)

    @blp.arguments(LabelSetSchema)
    @blp.response(201, LabelSetSchema)
    def post(self, args: dict[str, Any]) -> LabelSet:
        """A project's label set; the order of the labels is their shortcut keys 1 to 9."""
        return service.create_label_set(session(), current_access(), args)


@blp.route("/label-sets/<id:set_id>")
class LabelSetById(AuthedView):
    @blp.response(200, LabelSetSchema)
    def get(self, set_id: int) -> LabelSet:
        return service.get_label_set(session(), current_access(), set_id)

    @blp.arguments(LabelSetUpdateSchema)
    @blp.response(200, LabelSetSchema)
    def patch(self, args: dict[str, Any], set_id: int) -> LabelSet:
        return service.update_label_set(session(), current_access(), set_id, args)


@blp.route("/tasks")
class Tasks(AuthedView):
    @blp.arguments(ProjectQuerySchema, location="query")
    @blp.response(200, TaskSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[LabelTask]:
        stmt = service.tasks_query(current_access(), args.get("project_id"))
        return page_of_query(session(), stmt, pagination_parameters)

    @blp.arguments(TaskSchema)
    @blp.response(201, TaskSchema)
    def post(self, args: dict[str, Any]) -> LabelTask:
        """A task over the images of a dataset version."""
        return service.create_task(session(), current_access(), Settings.current(), args)


@blp.route("/tasks/<id:task_id>")
class TaskById(AuthedView):
    @blp.response(200, TaskSchema)
    def get(self, task_id: int) -> LabelTask:
        return service.get_task(session(), current_access(), task_id)


@blp.route("/tasks/<id:task_id>/progress")
class Progress(AuthedView):
    @blp.response(200, ProgressSchema)
    def get(self, task_id: int) -> dict[str, Any]:
        return service.progress(session(), service.get_task(session(), current_access(), task_id))


@blp.route("/tasks/<id:task_id>/items")
class Items(AuthedView):
    @blp.arguments(ItemsQuerySchema, location="query")
    @blp.response(200, ItemSchema(many=True))
    @blp.paginate()
    def get(
        self, args: dict[str, Any], task_id: int, pagination_parameters: PageParams
    ) -> list[LabelItem]:
        service.get_task(session(), current_access(), task_id)
        stmt = service.items_query(task_id, args.get("status"))
        return page_of_query(session(), stmt, pagination_parameters)


@blp.route("/tasks/<id:task_id>/next")
class NextItem(AuthedView):
    @blp.response(200, ItemSchema)
    def get(self, task_id: int) -> LabelItem:
        """The item a claim would give the caller now (new or rejected, held by no other
        annotator); a look that holds nothing for anyone. ``POST`` takes it."""
        return _or_nothing_left(service.next_item(session(), current_access(), task_id))

    @blp.response(200, ItemSchema)
    def post(self, task_id: int) -> LabelItem:
        """Take the next item to annotate: a new one is held for the caller for 30 minutes,
        so annotators working through one task get different items; a rejected one goes back
        to whoever annotated it. The project's annotators only (``jobs.submit``)."""
        return _or_nothing_left(service.claim_next(session(), current_access(), task_id))


def _or_nothing_left(item: LabelItem | None) -> LabelItem:
    if item is None:
        raise NotFound(gettext("Nothing is left to annotate in this task."))
    return item


def _detail(task_id: int, item: LabelItem) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(item, name) for name in ItemSchema().fields}
    out["annotations"] = service.annotations_of(session(), item.id)
    out["image_url"] = url_for("labelling.ItemImage", task_id=task_id, item_id=item.id)
    return out


@blp.route("/tasks/<id:task_id>/items/<id:item_id>")
class ItemById(AuthedView):
    @blp.response(200, ItemDetailSchema)
    def get(self, task_id: int, item_id: int) -> dict[str, Any]:
        _, item = service.get_item(session(), current_access(), task_id, item_id)
        return _detail(task_id, item)

    @blp.arguments(AnnotationsSchema)
    @blp.response(200, ItemDetailSchema)
    def put(self, args: dict[str, Any], task_id: int, item_id: int) -> dict[str, Any]:
        """Replace the item's annotations (points in image pixels)."""
        item = service.save_annotations(
            session(), current_access(), task_id, item_id, args["annotations"]
        )
        return _detail(task_id, item)


@blp.route("/tasks/<id:task_id>/items/<id:item_id>/image")
class ItemImage(AuthedView):
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="image/*")
    def get(self, task_id: int, item_id: int) -> Response:
        task, item = service.get_item(session(), current_access(), task_id, item_id)
        response = send_file(
            Path(task.dataset_version.path) / item.path, mimetype=media_type(item.path)
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


@blp.route("/tasks/<id:task_id>/items/<id:item_id>/review")
class Review(AuthedView):
    @blp.arguments(ReviewSchema)
    @blp.response(200, ItemSchema)
    def post(self, args: dict[str, Any], task_id: int, item_id: int) -> LabelItem:
        """Accept or reject an annotated item (``project.manage``)."""
        return service.review(session(), current_access(), task_id, item_id, args)


@blp.route("/tasks/<id:task_id>/export")
class Export(AuthedView):
    @blp.arguments(ExportQuerySchema, location="query")
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="application/gzip")
    def get(self, args: dict[str, Any], task_id: int) -> Response:
        """The annotated (or only the accepted) items in COCO, YOLO or VOC, as a .tar.gz."""
        spool, filename = service.export_archive(
            session(), current_access(), task_id, Format(args["format"]), args["only_accepted"]
        )
        response = send_file(
            spool, mimetype="application/gzip", as_attachment=True, download_name=filename
        )
        response.call_on_close(spool.close)
        return response

    @blp.arguments(ExportVersionSchema)
    @blp.response(201, VersionSchema)
    def post(self, args: dict[str, Any], task_id: int) -> DatasetVersion:
        """The export saved as a new version of a dataset (usable for training and
        evaluation like any other)."""
        return service.export_version(
            session(), current_access(), Settings.current(), task_id, args
        )
