"""Classification metrics of an evaluation (scikit-learn) and its confusion-matrix plot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def classification(
    y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]
) -> dict[str, Any]:
    """Accuracy, macro F1 / precision / recall, a per-class table and the confusion matrix."""
    from sklearn.metrics import (
        accuracy_score,
        confusion_matrix,
        precision_recall_fscore_support,
    )

    labels = list(labels)
    p, r, f, _ = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, average="macro", zero_division=0
    )
    pc, rc, fc, sc = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, average=None, zero_division=0
    )
    return {
        "metrics": {
            "accuracy": round(float(accuracy_score(y_true, y_pred)), 6),
            "f1": round(float(f), 6),
            "precision": round(float(p), 6),
            "recall": round(float(r), 6),
            "samples": len(y_true),
        },
        "per_class": [
            {
                "label": label,
                "precision": round(float(pc[i]), 6),
                "recall": round(float(rc[i]), 6),
                "f1": round(float(fc[i]), 6),
                "support": int(sc[i]),
            }
            for i, label in enumerate(labels)
        ],
        "labels": labels,
        "confusion": confusion_matrix(y_true, y_pred, labels=labels).tolist(),
    }


def confusion_png(confusion: list[list[int]], labels: Sequence[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure
    from sklearn.metrics import ConfusionMatrixDisplay

    fig = Figure(figsize=(1.2 + 0.5 * len(labels), 1.0 + 0.5 * len(labels)), dpi=100)
    ax = fig.add_subplot()
    ConfusionMatrixDisplay(np.array(confusion), display_labels=list(labels)).plot(
        ax=ax, colorbar=False
    )
    fig.tight_layout()
    fig.savefig(path, format="png")
