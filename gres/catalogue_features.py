"""Node features from the compute catalogue, for sites that constrain by hand.

``aipool gres render --catalogue-features`` adds to each node's features the precisions all of
its cards run natively (``bf16``, ``fp8`` …) and cumulative score classes per precision
(``bf16_ge200``: every card of the node offers at least 200 dense TFLOPS at bf16), so that
``sbatch --constraint=bf16_ge200`` works without naming card models. Job specs do not need
them (their ``precision`` and ``min_score`` name card models, which are features already), so
the default rendering, and the lab's, leave them out.
"""

from __future__ import annotations

from dataclasses import replace

from gres.catalogue import Card, Catalogue, Precision
from gres.model import Inventory, NodeInventory

#: the score classes: ``<precision>_ge<n>`` for each n a node's cards all reach
CLASSES = (100, 200, 400, 800, 1600)


def _cards(node: NodeInventory, catalogue: Catalogue) -> list[Card] | None:
    """The catalogue card of every device of the node; None if one is not in the catalogue."""
    devices = [(g.model, g.memory_mib) for g in node.gpus]
    devices += [(n.model, n.memory_mib) for n in node.npus]
    cards = [catalogue.lookup(model, memory) for model, memory in devices]
    if any(c is None for c in cards):
        return None
    return [c for c in cards if c is not None]


def node_catalogue_features(node: NodeInventory, catalogue: Catalogue) -> tuple[str, ...]:
    """The precision and score-class tokens of one node; none for a node without cards or
    with a card the catalogue does not know (a guess would place jobs wrongly)."""
    cards = _cards(node, catalogue)
    if not cards:
        return ()
    out = []
    for p in Precision:
        if all(c.supports(p) for c in cards):
            out.append(p.value)
            least = min(c.tflops[p] for c in cards)
            out += [f"{p.value}_ge{n}" for n in CLASSES if least >= n]
    return tuple(out)


def with_catalogue_features(inv: Inventory, catalogue: Catalogue) -> Inventory:
    """The inventory with every node's catalogue features added to its own."""
    nodes = tuple(
        replace(n, features=tuple(sorted({*n.features, *node_catalogue_features(n, catalogue)})))
        for n in inv.nodes
    )
    return replace(inv, nodes=nodes)
