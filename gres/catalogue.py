"""The compute catalogue: each accelerator model's capability per precision, with its source.

The shipped ``gres/catalogue.yaml`` holds vendors' published dense figures; a site file adds
entries or replaces entries of the same id. Both are checked with marshmallow when read. The
lookups are pure: which card a GRES type (and memory size) is, which cards run a precision,
which meet a minimum score.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from gres.errors import InventoryError
from gres.naming import GRES_TYPE_RE


class CatalogueError(InventoryError):
    """A catalogue file that cannot be used: one ``file: path: message`` line per problem."""


SHIPPED = Path(__file__).with_name("catalogue.yaml")
#: The site's own catalogue, read after the shipped one when it exists.
SITE_DEFAULT = Path("/etc/aipool/catalogue.yaml")
SITE_ENV = "AIPOOL_CATALOGUE"


class Precision(StrEnum):
    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"


@dataclass(frozen=True, slots=True)
class Card:
    """One card model. ``tflops`` holds dense figures (INT8 in TOPS); a missing precision is
    one the vendor does not publish or the card does not run natively."""

    id: str
    vendor: str
    name: str
    kind: str
    gres_types: tuple[str, ...]
    memory_gb: float | None
    bandwidth_gbs: float | None
    tflops: Mapping[Precision, float]
    source: str
    note: str = ""
    #: the note in Chinese, for the portal's Chinese readers
    note_zh: str = ""

    def supports(self, precision: Precision) -> bool:
        return self.tflops.get(precision, 0) > 0

    def meets(self, precision: Precision, minimum: float) -> bool:
        return self.tflops.get(precision, 0) >= minimum and self.supports(precision)


@dataclass(frozen=True, slots=True)
class Catalogue:
    cards: tuple[Card, ...]

    def by_id(self, card_id: str) -> Card | None:
        return next((c for c in self.cards if c.id == card_id), None)

    def lookup(self, gres_type: str, memory_mib: int = 0) -> Card | None:
        """The card a GRES type names; of several (``a100`` is 40 or 80 GB), the one whose
        memory is nearest ``memory_mib``, else the first listed."""
        found = [c for c in self.cards if gres_type.lower() in c.gres_types]
        if not found or not memory_mib:
            return found[0] if found else None
        gb = memory_mib / 1024
        return min(found, key=lambda c: abs((c.memory_gb or 0) - gb))

    def types_that(
        self, gres_types: Iterable[str], precision: Precision, minimum: float = 0
    ) -> tuple[str, ...]:
        """Of ``gres_types``, the ones whose card runs ``precision`` at ``minimum`` TFLOPS or
        more (every variant of the type must: a job cannot choose the 80 GB A100), sorted."""
        out = []
        for t in sorted(set(gres_types)):
            cards = [c for c in self.cards if t in c.gres_types]
            if cards and all(c.meets(precision, minimum) for c in cards):
                out.append(t)
        return tuple(out)


# --- reading ---------------------------------------------------------------------------------


class _TflopsSchema(Schema):
    class Meta:
        unknown = RAISE

    fp32 = fields.Float(allow_none=True, validate=validate.Range(min=0))
    fp16 = fields.Float(allow_none=True, validate=validate.Range(min=0))
    bf16 = fields.Float(allow_none=True, validate=validate.Range(min=0))
    fp8 = fields.Float(allow_none=True, validate=validate.Range(min=0))
    int8 = fields.Float(allow_none=True, validate=validate.Range(min=0))


class _CardSchema(Schema):
    class Meta:
        unknown = RAISE

    id = fields.String(required=True, validate=validate.Regexp(r"^[a-z0-9][a-z0-9_.-]{0,63}$"))
    vendor = fields.String(required=True, validate=validate.Length(1, 64))
    name = fields.String(required=True, validate=validate.Length(1, 128))
    kind = fields.String(required=True, validate=validate.Regexp(GRES_TYPE_RE.pattern))
    gres_types = fields.List(
        fields.String(validate=validate.Regexp(GRES_TYPE_RE.pattern)),
        required=True,
        validate=validate.Length(min=1),
    )
    memory_gb = fields.Float(allow_none=True, load_default=None, validate=validate.Range(min=0))
    bandwidth_gbs = fields.Float(allow_none=True, load_default=None, validate=validate.Range(min=0))
    tflops = fields.Nested(_TflopsSchema, required=True)
    # a figure without a source cannot be checked; insist on a public address
    source = fields.Url(required=True, schemes={"https", "http"})
    note = fields.String(load_default="")
    note_zh = fields.String(load_default="")


class _FileSchema(Schema):
    class Meta:
        unknown = RAISE

    version = fields.Integer(load_default=1, validate=validate.Equal(1))
    cards = fields.List(fields.Nested(_CardSchema), required=True)


def _flatten(messages: Any, prefix: str = "") -> list[str]:
    if isinstance(messages, Mapping):
        out = []
        for key, value in messages.items():
            path = f"{prefix}[{key}]" if isinstance(key, int) else f"{prefix}.{key}".lstrip(".")
            out += _flatten(value, path)
        return out
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [f"{prefix}: {m}" for m in messages]
    return [f"{prefix}: {messages}"]


def parse_cards(data: Any, where: str) -> tuple[Card, ...]:
    """Check one catalogue document and build its cards; every problem at once."""
    try:
        loaded = _FileSchema().load(data if isinstance(data, Mapping) else {"cards": data})
    except ValidationError as exc:
        raise CatalogueError([f"{where}: {m}" for m in _flatten(exc.messages)]) from None
    cards = []
    for c in loaded["cards"]:
        tflops = {Precision(k): v for k, v in c["tflops"].items() if v}
        cards.append(Card(**{**c, "gres_types": tuple(c["gres_types"]), "tflops": tflops}))
    ids = [c.id for c in cards]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CatalogueError([f"{where}: card id {i!r} is listed twice" for i in dupes])
    return tuple(cards)


def _read(path: Path) -> tuple[Card, ...]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogueError([f"{path}: {exc}"]) from None
    return parse_cards(data, str(path))


def merge(base: Iterable[Card], site: Iterable[Card]) -> Catalogue:
    """The shipped cards with the site's: same id replaces, new ids are added at the end."""
    site = tuple(site)
    by_id = {c.id: c for c in site}
    kept = [by_id.pop(c.id, c) for c in base]
    return Catalogue(tuple(kept) + tuple(c for c in site if c.id in by_id))


def site_path(env: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if env is None else env
    if env.get(SITE_ENV):
        return Path(env[SITE_ENV])
    return SITE_DEFAULT if SITE_DEFAULT.is_file() else None


def load_catalogue(site: Path | None = None) -> Catalogue:
    """The shipped catalogue merged with ``site`` (a named site file must exist)."""
    shipped = _read(SHIPPED)
    return merge(shipped, _read(site) if site is not None else ())


@lru_cache(maxsize=1)
def default_catalogue() -> Catalogue:
    """The shipped catalogue and this host's site file, read once per process."""
    return load_catalogue(site_path())
