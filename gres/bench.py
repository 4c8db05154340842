"""The benchmark a score job runs on one node: a square matrix multiply per precision.

``python -m gres.bench --kind a100 --node gpu1 --out FILE`` measures with torch where a card
can run it (CUDA, or Ascend through torch_npu), with numpy FP32 on a node without cards, and
otherwise — a card Slurm hands out that no runtime on the node can open, as the lab's fake
device files — writes the catalogue's figures marked ``catalogue``. It prints and writes the
scores as JSON (:mod:`gres.scores`). FP32 is measured without TF32, as the catalogue's FP32.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gres.catalogue import Precision, default_catalogue
from gres.scores import Score, catalogue_scores

#: what torch measures; fp8 needs scaled matmuls that differ between cards, so the catalogue
#: figure stands for it
TORCH_PRECISIONS = (Precision.FP32, Precision.FP16, Precision.BF16, Precision.INT8)


def timed(step: Callable[[], Any], sync: Callable[[], Any], repeat: int) -> float:
    """Seconds per ``step`` after a warm-up, best of three rounds."""
    step()
    sync()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            step()
        sync()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def numpy_fp32(n: int = 1024) -> float:
    """TFLOPS of an n-by-n FP32 matrix multiply on the CPU."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    return 2 * n**3 / timed(lambda: a @ b, lambda: None, 3) / 1e12


def torch_device(kind: str) -> tuple[Any, str, Callable[[], Any]] | None:
    """torch and a device that can run on this node's card, or None."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    if kind != "npu" and torch.cuda.is_available() and torch.cuda.device_count():
        return torch, "cuda", torch.cuda.synchronize
    try:
        importlib.import_module("torch_npu")
    except ImportError:
        return None
    if torch.npu.is_available() and torch.npu.device_count():
        return torch, "npu", torch.npu.synchronize
    return None


def torch_scores(
    found: tuple[Any, str, Callable[[], Any]], n: int = 8192
) -> dict[Precision, float]:
    torch, dev, sync = found
    torch.backends.cuda.matmul.allow_tf32 = False
    out: dict[Precision, float] = {}
    for p in TORCH_PRECISIONS:
        try:
            out[p] = round(2 * n**3 / timed(_matmul(torch, dev, p, n), sync, 10) / 1e12, 1)
        except (RuntimeError, AttributeError, TypeError):  # a precision the card cannot run
            continue
    return out


def _matmul(torch: Any, dev: str, p: Precision, n: int) -> Callable[[], Any]:
    if p is Precision.INT8:  # int8 in, int32 out: the tensor cores' integer path
        a = torch.randint(-8, 8, (n, n), dtype=torch.int8, device=dev)
        b = torch.randint(-8, 8, (n, n), dtype=torch.int8, device=dev).t()
        return lambda: torch._int_mm(a, b)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[p.value]
    a = torch.randn(n, n, dtype=dtype, device=dev)
    b = torch.randn(n, n, dtype=dtype, device=dev)
    return lambda: a @ b


def run(kind: str, node: str, memory_mib: int = 0, *, now: float | None = None) -> list[Score]:
    at = time.time() if now is None else now
    if kind == "cpu":
        return [
            Score("cpu", Precision.FP32, round(numpy_fp32(), 3), "measured-cpu", node, at, "numpy")
        ]
    card = default_catalogue().lookup(kind, memory_mib)
    found = torch_device(card.kind if card else "gpu")
    if found is None:
        return catalogue_scores(default_catalogue(), kind, node, at, memory_mib)
    torch, dev, _ = found
    name = torch.cuda.get_device_name(0) if dev == "cuda" else dev
    return [Score(kind, p, v, "measured", node, at, name) for p, v in torch_scores(found).items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gres.bench", description=__doc__)
    parser.add_argument("--kind", required=True, help="the node's card GRES type, or cpu")
    parser.add_argument("--node", required=True)
    parser.add_argument("--memory-mib", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the scores to this file")
    args = parser.parse_args(argv)
    text = json.dumps([s.to_dict() for s in run(args.kind, args.node, args.memory_mib)])
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
