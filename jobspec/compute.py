"""A spec's precision and minimum score, as a Slurm constraint over the pool's card models.

Every node already carries its card models as features (``a100``, ``910b``; docs/gres.md), so
the cards that run a precision at a score are an OR of those features: Slurm then places the
job, and no slurm.conf change is needed. Only models the pool has are named, because Slurm
refuses a constraint naming a feature no node has.
"""

from __future__ import annotations

from collections.abc import Collection

from gres.catalogue import Catalogue, default_catalogue
from jobspec.errors import SpecError
from jobspec.model import Resources

_KINDS = {"gpus": "gpu", "npus": "npu"}


def card_types(
    res: Resources,
    pool: Collection[str] | None,
    catalogue: Catalogue | None = None,
    path: str = "resources",
) -> tuple[str, ...]:
    """The pool's GRES types that satisfy ``res.precision`` and ``res.min_score``; empty when
    the spec asks for neither. ``pool`` None (not known, as in a dry run) takes every model of
    the catalogue. Raises :class:`SpecError` at the field when no card can."""
    if res.precision is None:
        return ()
    cat = catalogue or default_catalogue()
    kind = "npu" if res.npus else "gpu"
    chosen = res.npu_type if res.npus else res.gpu_type
    if chosen is not None:
        candidates: Collection[str] = (chosen,)
    elif pool is None:
        candidates = {t for c in cat.cards if c.kind == kind for t in c.gres_types}
    else:
        candidates = pool
    kinds = {t for c in cat.cards if c.kind == kind for t in c.gres_types}
    known_here = sorted(t for t in candidates if t in kinds)
    fit = cat.types_that(known_here, res.precision, res.min_score or 0)
    if fit:
        return fit
    field = "min_score" if res.min_score else "precision"
    if chosen is not None and not known_here:
        raise SpecError.at(f"{path}.{field}", f"{chosen} is not in the compute catalogue")
    known = ", ".join(known_here) or "none"
    if res.min_score:
        message = (
            f"no {kind.upper()} model here runs {res.precision} at {res.min_score:g} TFLOPS "
            f"(models: {known}); see the compute catalogue"
        )
    else:
        message = f"no {kind.upper()} model here runs {res.precision} (models: {known})"
    raise SpecError.at(f"{path}.{field}", message)


def constraint(features: tuple[str, ...], types: tuple[str, ...]) -> str | None:
    """The spec's own features AND one of the card types: ``nvlink&(a100|h100)``."""
    if not types:
        return "&".join(features) or None
    either = "|".join(types)
    if not features:
        return either
    group = f"({either})" if len(types) > 1 else either
    return "&".join((*features, group))
