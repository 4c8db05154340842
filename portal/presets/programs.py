"""Every preset program by its catalogue ``runtime`` name: one module per family of tasks."""

from __future__ import annotations

from portal.presets import diffusion, inpainting, kinds, superres, textgen, vision, vision_dense
from portal.presets.kinds import Kind

KINDS: dict[str, type[Kind]] = {
    **kinds.KINDS,
    **vision.KINDS,
    **vision_dense.KINDS,
    **superres.KINDS,
    **diffusion.KINDS,
    **inpainting.KINDS,
    **textgen.KINDS,
}
