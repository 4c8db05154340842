"""Nodes indexed by free shape: the best node for a request without scoring every node.

A deterministic scorer looks only at what a node has free (and its totals, card model and
kinds of work), never at its name, so nodes that look alike score alike. :class:`ShapeIndex`
groups nodes by that shape and scores a request once per distinct shape, caching the score;
per request it keeps a heap of shapes by (best score, lowest node name), so finding the
best node is a heap look-up and placing a job re-scores only the shape its node moved to.
The answer is exactly :func:`gres.placement.decide`'s over the same nodes: the highest score,
equal scores to the lowest node name, the cards the scorer picks in that node.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable

from gres.placement import Decision, NodeView, Request, Scorer, Workload, fits

#: Everything a scorer may look at: a node without its name.
Shape = tuple[str, int, int, tuple[int, ...], int, int, frozenset[str]]

Allowed = Callable[[str], bool]


def shape_of(view: NodeView) -> Shape:
    return (
        view.gpu_model,
        view.cpu_milli_free,
        view.mem_mib_free,
        view.gpu_free_milli,
        view.cpu_milli_total,
        view.mem_mib_total,
        view.gpu_kinds,
    )


class _Heap:
    """Shapes by (-score, first node name) for one request; stale entries are skipped."""

    __slots__ = ("entries", "seen")

    def __init__(self) -> None:
        self.entries: list[tuple[float, str, Shape]] = []
        #: how much of the index's change log this heap has taken in
        self.seen = 0


class ShapeIndex:
    """The nodes of one pool of nodes, grouped by shape, for one scorer and workload."""

    def __init__(
        self,
        scorer: Scorer,
        workload: Workload,
        scores: dict[Request, dict[Shape, float | None]] | None = None,
    ) -> None:
        """``scores`` may be kept from an earlier index of the same scorer and workload: a
        shape scores the same whichever index it is in (a daemon's next cycle reuses them)."""
        if scorer.random_ties:
            raise ValueError(f"{scorer.name} breaks ties at random: no index can answer for it")
        self.scorer = scorer
        self.workload = workload
        self._shape_of: dict[str, Shape] = {}
        self._members: dict[Shape, list[str]] = {}
        self._views: dict[Shape, NodeView] = {}
        self._scores: dict[Request, dict[Shape, float | None]] = {} if scores is None else scores
        self._heaps: dict[Request, _Heap] = {}
        #: shapes whose first member changed, in order (heaps catch up on their next query)
        self._log: list[Shape] = []
        self.scorer_calls = 0

    def __len__(self) -> int:
        return len(self._shape_of)

    def __contains__(self, name: object) -> bool:
        return name in self._shape_of

    def rescore(self, workload: Workload) -> None:
        """Score against another workload from now on: the grouping stays, the scores go."""
        self.workload = workload
        self._scores.clear()
        self._heaps.clear()
        self._log.clear()

    # ------------------------------------------------------------------ changes
    def update(self, view: NodeView) -> None:
        """Add ``view``'s node, or move it to its new shape."""
        shape = shape_of(view)
        old = self._shape_of.get(view.name)
        if old == shape:
            return
        if old is not None:
            self._leave(view.name, old)
        self._shape_of[view.name] = shape
        members = self._members.get(shape)
        if members is None:
            self._members[shape] = [view.name]
            self._views[shape] = view
            self._log.append(shape)
        else:
            bisect.insort(members, view.name)
            if members[0] == view.name:
                self._log.append(shape)

    def remove(self, name: str) -> None:
        """Take a node out (it went down, or may no longer take work)."""
        old = self._shape_of.pop(name, None)
        if old is not None:
            self._leave(name, old)

    def _leave(self, name: str, shape: Shape) -> None:
        members = self._members[shape]
        first = members[0] == name
        members.remove(name)
        if not members:
            del self._members[shape]
            del self._views[shape]
        elif first:
            self._log.append(shape)

    # ------------------------------------------------------------------ queries
    def fits(self, request: Request, name: str) -> bool:
        """Whether node ``name`` (in the index) fits ``request`` now; by its shape, cached."""
        return self.score(request, self._shape_of[name]) is not None

    def score(self, request: Request, shape: Shape) -> float | None:
        """The scorer's score of a node of ``shape`` (None: it does not fit), cached."""
        scores = self._scores.setdefault(request, {})
        if shape in scores:
            return scores[shape]
        view = self._views[shape]
        value: float | None = None
        if fits(request, view):
            value = self.scorer.score(request, view, self.workload)
            self.scorer_calls += 1
        scores[shape] = value
        return value

    def best(self, request: Request) -> Decision | None:
        """The node ``decide`` would pick among all indexed nodes; None if none fits."""
        heap = self._heap(request)
        entries = heap.entries
        while entries:
            neg, name, shape = entries[0]
            members = self._members.get(shape)
            if members is not None and members[0] == name:
                return self._decision(request, name, shape, -neg)
            heapq.heappop(entries)
        return None

    def best_among(self, request: Request, allowed: Allowed) -> Decision | None:
        """The same, among the nodes ``allowed`` accepts (node lists, constraints, nodes
        already chosen for a job); a pass over the shapes, scores from the cache."""
        found: tuple[float, str, Shape] | None = None
        for shape, members in self._members.items():
            value = self.score(request, shape)
            if value is None or (found is not None and value < found[0]):
                continue
            name = next((m for m in members if allowed(m)), None)
            if name is None:
                continue
            if found is None or value > found[0] or name < found[1]:
                found = (value, name, shape)
        return None if found is None else self._decision(request, found[1], found[2], found[0])

    def _heap(self, request: Request) -> _Heap:
        heap = self._heaps.get(request)
        if heap is None:
            heap = self._heaps[request] = _Heap()
            for shape, members in self._members.items():
                value = self.score(request, shape)
                if value is not None:
                    heap.entries.append((-value, members[0], shape))
            heapq.heapify(heap.entries)
            heap.seen = len(self._log)
            return heap
        for shape in self._log[heap.seen :]:
            now = self._members.get(shape)
            if now is None:
                continue
            value = self.score(request, shape)
            if value is not None:
                heapq.heappush(heap.entries, (-value, now[0], shape))
        heap.seen = len(self._log)
        return heap

    def _decision(self, request: Request, name: str, shape: Shape, value: float) -> Decision:
        view = self._views[shape]
        cards = self.scorer.cards(request, view, self.workload, None)
        return Decision(name, cards, value, f"{self.scorer.name}: score {value:g}")


def build(views: Iterable[NodeView], scorer: Scorer, workload: Workload) -> ShapeIndex:
    index = ShapeIndex(scorer, workload)
    for view in views:
        index.update(view)
    return index
