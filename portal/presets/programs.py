"""Every preset program by its catalogue ``runtime`` name: one module per family of tasks."""

from __future__ import annotations

from portal.presets import (
    diffusion,
    extraction,
    inpainting,
    kinds,
    superres,
    textgen,
    understanding,
    vision,
    vision_dense,
)
from portal.presets.kinds import Kind

KINDS: dict[str, type[Kind]] = {
    **kinds.KINDS,
    **vision.KINDS,
    **vision_dense.KINDS,
    **superres.KINDS,
    **diffusion.KINDS,
    **inpainting.KINDS,
    **textgen.KINDS,
    **understanding.KINDS,
    **extraction.KINDS,
}
