"""What every family of ours must look like; used by each collector's test."""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from plumbing.metrics import SnapshotCollector, registry_of

BOUNDED = {
    "cluster", "partition", "node", "kind", "model", "tenant", "qos", "policy", "state",
    "phase", "type", "endpoint", "method", "status", "card", "outcome", "le", "mode",
    "device", "mount", "check",
}  # fmt: skip
UNITS = ("_seconds", "_bytes", "_ratio", "_celsius", "_watts", "_cards")


def check_scheme(families: Iterable[Metric]) -> dict[str, Metric]:
    """Each family: ``aipool_`` name, a counter ends in ``_total``, a unit word only at
    the end, ratios within 0…1, no label outside the bounded set; the exposition parses.
    Returns the families parsed back from the text, by name."""
    families = list(families)
    for f in families:
        assert re.fullmatch(r"aipool_[a-z0-9_]+", f.name), f.name
        assert f.documentation, f.name
        if f.type == "counter":
            # prometheus_client keeps a counter's name without _total; the text adds it
            assert not f.name.endswith("_total"), f.name
        for unit in UNITS:
            assert unit not in f.name or f.name.endswith(unit), f.name
        for s in f.samples:
            assert set(s.labels) <= BOUNDED, (f.name, s.labels)
            if f.name.endswith("_ratio"):
                assert 0.0 <= s.value <= 1.0, (f.name, s)
    text = generate_latest(registry_of([SnapshotCollector(lambda: families)])).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def values(family: Metric, **match: str) -> dict[tuple[str, ...], float]:
    """Samples of ``family`` whose labels include ``match``: the other labels' values
    (sorted by label name) -> value."""
    out = {}
    for s in family.samples:
        if all(s.labels.get(k) == v for k, v in match.items()):
            rest = tuple(v for k, v in sorted(s.labels.items()) if k not in match)
            out[rest] = s.value
    return out
