"""Every preset program by its catalogue ``runtime`` name: one module per family of tasks."""

from __future__ import annotations

from portal.presets import extraction, kinds, understanding
from portal.presets.kinds import Kind

KINDS: dict[str, type[Kind]] = {
    **kinds.KINDS,
    **understanding.KINDS,
    **extraction.KINDS,
}
