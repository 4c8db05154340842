"""Errors of the gres package."""

from __future__ import annotations

from collections.abc import Sequence


class InventoryError(ValueError):
    """An inventory that cannot be used; every message names the field path that is wrong.

    ``errors`` holds one ``"path: message"`` line per problem (``nodes[1].gpus[0].count: must
    be at least 1``), so a CLI can print all of them at once instead of making the operator fix
    one mistake per run.
    """

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors: tuple[str, ...] = tuple(errors) or ("inventory: invalid",)
        super().__init__("\n".join(self.errors))


class ProbeError(RuntimeError):
    """A device probe found hardware but could not read it completely.

    Raised instead of returning a partial inventory: a node rendered with fewer devices than it
    has would silently strand them.
    """
