"""Every preset program by its catalogue ``runtime`` name: one module per family of tasks."""

from __future__ import annotations

from portal.presets import kinds, textgen
from portal.presets.kinds import Kind

KINDS: dict[str, type[Kind]] = {
    **kinds.KINDS,
    **textgen.KINDS,
}
