from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, fields

from gres.catalogue import Card, Precision
from gres.scores import Score
from portal.catalogue.service import CatalogueView

_TFLOPS: dict[str, fields.Field[Any]] = {p.value: fields.Float(allow_none=True) for p in Precision}


class CardSchema(Schema):
    id = fields.String()
    vendor = fields.String()
    name = fields.String()
    kind = fields.String(metadata={"description": "gpu, npu …: the GRES the card is"})
    gres_types = fields.List(fields.String(), metadata={"description": "Slurm GRES types"})
    memory_gb = fields.Float(allow_none=True)
    bandwidth_gbs = fields.Float(allow_none=True, metadata={"description": "GB/s"})
    tflops = fields.Nested(
        Schema.from_dict(_TFLOPS, name="TflopsSchema"),
        metadata={"description": "dense TFLOPS per precision (int8: TOPS); null: not published"},
    )
    source = fields.String(metadata={"description": "the vendor's public page or datasheet"})
    note = fields.String()
    note_zh = fields.String(metadata={"description": "the note in Chinese"})


class ScoreSchema(Schema):
    kind = fields.String(metadata={"description": "the node kind: its card's GRES type, or cpu"})
    precision = fields.String()
    tflops = fields.Float()
    source = fields.String(metadata={"description": "measured, measured-cpu or catalogue"})
    node = fields.String()
    at = fields.DateTime()
    device = fields.String()


class CatalogueSchema(Schema):
    cards = fields.List(fields.Nested(CardSchema))
    scores = fields.List(fields.Nested(ScoreSchema))


def card_data(c: Card) -> dict[str, Any]:
    return {
        "id": c.id,
        "vendor": c.vendor,
        "name": c.name,
        "kind": c.kind,
        "gres_types": list(c.gres_types),
        "memory_gb": c.memory_gb,
        "bandwidth_gbs": c.bandwidth_gbs,
        "tflops": {p.value: c.tflops.get(p) for p in Precision},
        "source": c.source,
        "note": c.note,
        "note_zh": c.note_zh,
    }


def score_data(s: Score) -> dict[str, Any]:
    return s.to_dict() | {"at": datetime.fromtimestamp(s.at, UTC)}


def catalogue_data(view: CatalogueView) -> dict[str, Any]:
    return {
        "cards": [card_data(c) for c in view.cards],
        "scores": [score_data(s) for s in view.scores],
    }
