"""Per-card metrics of the node agent: one set for GPUs and NPUs, base units."""

from __future__ import annotations

from gres.device import DeviceSample
from slurm_plugins.node.metrics import CardView, NodeMetrics, card_families
from tests.unit.metrics.scheme import check_scheme, values

DEVICES = (
    DeviceSample("gpu", 0, 75.0, 1024, 40960, 250.5, 61.0),
    DeviceSample("gpu", 1, None, None, None, None, None),  # a card that says nothing
    DeviceSample("npu", 3, 100.0, 2048, 65536, None, 48.0),
)


def test_cards_in_base_units() -> None:
    fam = check_scheme(card_families(CardView("lab", "gpu1", DEVICES)))
    assert values(fam["aipool_card_utilisation_ratio"], node="gpu1") == {
        ("0", "lab", "gpu"): 0.75,
        ("3", "lab", "npu"): 1.0,
    }
    assert values(fam["aipool_card_memory_used_bytes"], card="0") == {
        ("lab", "gpu", "gpu1"): 1024 * 2**20
    }
    assert values(fam["aipool_card_memory_total_bytes"], kind="npu") == {
        ("3", "lab", "gpu1"): 65536 * 2**20
    }
    assert values(fam["aipool_card_power_watts"]) == {("0", "lab", "gpu", "gpu1"): 250.5}
    assert values(fam["aipool_card_temperature_celsius"], kind="npu") == {
        ("3", "lab", "gpu1"): 48.0
    }


def test_the_registry_shows_the_latest_samples_only() -> None:
    m = NodeMetrics()
    assert list(m.registry.collect()) == []
    m.saw(CardView("lab", "gpu1", DEVICES))
    m.saw(CardView("lab", "gpu1", DEVICES[:1]))
    fam = check_scheme(m.registry.collect())
    assert list(values(fam["aipool_card_utilisation_ratio"])) == [("0", "lab", "gpu", "gpu1")]
