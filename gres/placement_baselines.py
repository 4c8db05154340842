"""The baseline node scorers of the FGD paper, as its simulator computes them.

Each returns kube-scheduler's integer score (0-100, higher is better) for a node that
:func:`gres.placement_model.fits` the request; equal scores are ties that the scheduler breaks
uniformly at random. The integer truncation matters: it decides how many nodes tie, and the
published figures were measured with it, so it is kept rather than "improved".

* random-fit — every fitting node scores the same, so the choice is uniform.
* best-fit — the least CPU + GPU left over, each normalised by the largest node (128 CPUs,
  8 cards) and weighted 1/2.
* dot-product (Tetris) — ``1 - (free . request) / 2`` over (CPU, GPU) normalised the same way:
  the node whose free vector aligns least with the request, as the simulator ranks it.
* GPU packing — shared cards first, then free cards of a used node, then an idle node.
* GPU clustering — nodes already running the same kind of GPU work (share, 1-, 2-, 4-, 8-card)
  first, then idle nodes, then mixed ones; fuller nodes first within each tier.
"""

from __future__ import annotations

from gres.placement_model import KIND_CPU, MILLI, NodeView, Request, Workload

#: Largest node of the trace, used to normalise (CPU milli, GPU milli).
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
MAX_SCORE = 100


def score_random(request: Request, node: NodeView, workload: Workload) -> float:
    """All fitting nodes tie."""
    return 0.0


def score_best_fit(request: Request, node: NodeView, workload: Workload) -> float:
    left = 0.5 * (node.cpu_milli_free - request.cpu_milli) / MAX_SPEC_CPU
    left += 0.5 * (node.gpu_free_total - request.total_gpu_milli) / MAX_SPEC_GPU
    return float(int((1.0 - left) * MAX_SCORE))


def score_dot_product(request: Request, node: NodeView, workload: Workload) -> float:
    dot = (node.cpu_milli_free / MAX_SPEC_CPU) * (request.cpu_milli / MAX_SPEC_CPU)
    dot += (node.gpu_free_total / MAX_SPEC_GPU) * (request.total_gpu_milli / MAX_SPEC_GPU)
    return float(int(MAX_SCORE * (1.0 - dot / 2)))


def score_gpu_packing(request: Request, node: NodeView, workload: Workload) -> float:
    if request.gpu_milli <= 0:
        return 0.0
    free = node.gpu_free_milli
    full = node.full_cards
    if full == node.gpu_count:  # an idle node: fewer cards first
        return float(max(MAX_SCORE // 3 - full, full))
    needed = request.gpu_count
    used: list[int] = []
    full_used = 0
    for index in sorted(range(len(free)), key=free.__getitem__):  # least free first
        if needed == 0:
            break
        if request.gpu_milli <= free[index]:
            needed -= 1
            used.append(index)
            full_used += free[index] == MILLI
    if needed:
        return 0.0
    if full_used:  # free cards of a node already in use
        return float(max(MAX_SCORE // 2 - full_used, MAX_SCORE // 3))
    left_pct = sum(free[i] * 100 // MILLI for i in used)
    return float(max(MAX_SCORE - left_pct // 10, MAX_SCORE // 2))


def score_gpu_clustering(request: Request, node: NodeView, workload: Workload) -> float:
    kind = request.kind
    if kind == KIND_CPU:
        return 0.0
    fullness = _trunc_div(MAX_SCORE // 4 * (MAX_SPEC_GPU - node.gpu_free_total), MAX_SPEC_GPU)
    if kind in node.gpu_kinds:
        tier = 3 if len(node.gpu_kinds) == 1 else 2
    else:
        tier = 1 if not node.gpu_kinds else 0
    return float(fullness + tier * MAX_SCORE // 4)


def _trunc_div(a: int, b: int) -> int:
    """Integer division rounding toward zero, as Go's ``/`` on integers does."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q
