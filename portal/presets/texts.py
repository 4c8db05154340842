"""The presets' titles and summaries in the reader's language.

``catalog.yaml`` is where they are written (in English); :func:`extract` is the Babel
extraction method that reads those two fields from it (babel.cfg names it), so they are in the
message catalogue like any marked text and are translated where they are shown."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

import yaml

from portal.i18n import gettext
from portal.presets.catalog import Preset

FIELDS = ("title", "summary")


def title(preset: Preset) -> str:
    return gettext(preset.title)


def summary(preset: Preset) -> str:
    return gettext(preset.summary)


def extract(
    fileobj: IO[bytes],
    keywords: Mapping[str, Any],
    comment_tags: Collection[str],
    options: Mapping[str, Any],
) -> Iterator[tuple[int, str, str, list[str]]]:
    """Babel's extraction method for catalog.yaml: (line, keyword, message, comments) of each
    preset's title and summary."""
    root = yaml.compose(fileobj)
    for item in getattr(root, "value", []):
        for key, value in item.value:
            if key.value in FIELDS and isinstance(value.value, str):
                yield value.start_mark.line + 1, "N_", value.value, [f"preset {key.value}"]
