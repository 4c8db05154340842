"""What the catalogue page and API show: the catalogue (shipped and site) and the scores file.

Nothing here is per tenant: the cards and their figures are the same for every signed-in user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flask import current_app

from gres.catalogue import Card, default_catalogue
from gres.scores import Score, load_scores


@dataclass(frozen=True, slots=True)
class CatalogueView:
    cards: tuple[Card, ...]
    scores: tuple[Score, ...]
    #: the scores file could not be read (it is the operator's to fix, not the reader's)
    scores_unreadable: bool = False


def read_catalogue() -> CatalogueView:
    path = current_app.config.get("SCORES_FILE")
    scores: list[Score] = []
    unreadable = False
    if path:
        try:
            scores = load_scores(Path(path))
        except (OSError, ValueError, KeyError, TypeError):
            current_app.logger.warning("unreadable scores file %s", path, exc_info=True)
            unreadable = True
    return CatalogueView(default_catalogue().cards, tuple(scores), unreadable)
