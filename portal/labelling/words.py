"""What the labelling pages call shapes, item states and export formats, in words."""

from __future__ import annotations

from portal.i18n import gettext
from portal.labelling.formats import Format
from portal.labelling.models import ItemStatus, Kind
from translations import N_

SHAPES = {
    Kind.CLASS: N_("Image class"),
    Kind.BBOX: N_("Box"),
    Kind.POLYGON: N_("Polygon"),
    Kind.POINT: N_("Point"),
}
STATUSES = {
    ItemStatus.NEW: N_("Not annotated yet"),
    ItemStatus.ANNOTATED: N_("Annotated"),
    ItemStatus.ACCEPTED: N_("Accepted"),
    ItemStatus.REJECTED: N_("Rejected"),
}
# product names: the same in every language
FORMATS = {Format.COCO: "COCO", Format.YOLO: "YOLO", Format.VOC: "Pascal VOC"}


def shape(kind: str) -> str:
    """A shape's name in the reader's language (the value itself if unknown)."""
    known = {k.value: k for k in Kind}
    return gettext(SHAPES[known[kind]]) if kind in known else kind


def status(value: str) -> str:
    """An item's state in the reader's language (the value itself if unknown)."""
    known = {s.value: s for s in ItemStatus}
    return gettext(STATUSES[known[value]]) if value in known else value
