"""The compute catalogue: the shipped file is valid and sourced, lookups, site overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gres.catalogue import (
    CatalogueError,
    Precision,
    default_catalogue,
    load_catalogue,
    parse_cards,
    site_path,
)
from gres.catalogue_features import node_catalogue_features, with_catalogue_features
from gres.cli import cli
from gres.inventory import load_inventory

CARD = {
    "id": "x1",
    "vendor": "acme",
    "name": "Acme X1",
    "kind": "gpu",
    "gres_types": ["x1"],
    "memory_gb": 16,
    "bandwidth_gbs": 400,
    "tflops": {"fp32": 10, "fp16": 100, "bf16": None},
    "source": "https://acme.example/x1.pdf",
}


def test_shipped_catalogue_names_every_model_with_a_source() -> None:
    cat = load_catalogue()
    ids = {c.id for c in cat.cards}
    assert {"a100-40gb", "a100-80gb", "h100-sxm", "h800-sxm", "h20", "l40s", "a800-80gb"} <= ids
    assert {"v100-32gb", "t4", "rtx4090", "ascend-910b", "ascend-310p"} <= ids
    assert all(c.source.startswith("https://") for c in cat.cards)


def test_lookup_by_gres_type_picks_the_nearest_memory() -> None:
    cat = default_catalogue()
    a100_80 = cat.lookup("a100", memory_mib=81920)
    a100_40 = cat.lookup("a100", memory_mib=40960)
    assert a100_80 is not None
    assert a100_80.id == "a100-80gb"
    assert a100_40 is not None
    assert a100_40.id == "a100-40gb"
    h100 = cat.lookup("H100")
    assert h100 is not None
    assert h100.tflops[Precision.BF16] == 989
    assert cat.lookup("nosuchcard") is None


def test_precision_support_and_scores() -> None:
    cat = default_catalogue()
    pool = ["a100", "v100", "t4", "910b", "310p", "unknown"]
    assert cat.types_that(pool, Precision.BF16) == ("910b", "a100")
    assert cat.types_that(pool, Precision.FP16, 300) == ("910b", "a100")
    assert cat.types_that(pool, Precision.FP16, 313.5) == ()
    assert cat.types_that(["h100", "l40s"], Precision.FP8, 1000) == ("h100",)
    t4 = cat.lookup("t4")
    assert t4 is not None
    assert not t4.supports(Precision.BF16)
    assert t4.supports(Precision.INT8)


def test_site_file_replaces_and_adds(tmp_path: Path) -> None:
    site = tmp_path / "catalogue.yaml"
    site.write_text(
        "cards:\n"
        "  - {id: t4, vendor: nvidia, name: T4 measured, kind: gpu, gres_types: [t4],\n"
        "     tflops: {fp32: 7}, source: 'https://site.example/t4'}\n"
        "  - {id: x1, vendor: acme, name: Acme X1, kind: gpu, gres_types: [x1],\n"
        "     tflops: {bf16: 50}, source: 'https://acme.example/x1'}\n",
        encoding="utf-8",
    )
    cat = load_catalogue(site)
    t4 = cat.lookup("t4")
    assert t4 is not None
    assert t4.name == "T4 measured"
    assert t4.tflops == {Precision.FP32: 7}
    assert cat.cards[-1].id == "x1"
    assert len(cat.cards) == len(load_catalogue().cards) + 1
    assert site_path({"AIPOOL_CATALOGUE": str(site)}) == site


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": "nowhere"}, "cards[0].source: Not a valid URL."),
        ({"tflops": {"fp64": 1}}, "cards[0].tflops.fp64: Unknown field."),
        ({"tflops": {"fp32": -1}}, "cards[0].tflops.fp32: Must be greater than or equal to 0."),
        ({"gres_types": ["A 100"]}, "cards[0].gres_types[0]: String does not match expected"),
        ({"colour": "red"}, "cards[0].colour: Unknown field."),
    ],
)
def test_bad_entries_are_named(change: dict[str, object], message: str) -> None:
    with pytest.raises(CatalogueError) as err:
        parse_cards({"cards": [{**CARD, **change}]}, "site.yaml")
    assert any(e.startswith(f"site.yaml: {message}") for e in err.value.errors), err.value.errors


def test_duplicate_ids_and_missing_site_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError, match="listed twice"):
        parse_cards({"cards": [CARD, CARD]}, "site.yaml")
    with pytest.raises(CatalogueError, match=r"missing\.yaml"):
        load_catalogue(tmp_path / "missing.yaml")


def test_catalogue_features_of_the_lab_nodes() -> None:
    inv = load_inventory(Path(__file__).parents[3] / "gres" / "examples" / "lab.yaml")
    cat = default_catalogue()
    got = {n.name: node_catalogue_features(n, cat) for n in inv.nodes}
    assert got["gpu1"] == (
        "fp32", "fp16", "fp16_ge100", "fp16_ge200", "bf16", "bf16_ge100", "bf16_ge200",
        "int8", "int8_ge100", "int8_ge200", "int8_ge400",
    )  # fmt: skip
    assert "fp8" not in got["npu1"]
    assert "bf16_ge200" in got["npu1"]
    assert got["cpu1"] == ()
    gpu1 = with_catalogue_features(inv, cat).node("gpu1")
    assert set(gpu1.features) >= {"bf16", "bf16_ge200", *inv.node("gpu1").features}


def test_a_card_the_catalogue_does_not_know_gets_no_guess(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    path.write_text(
        "nodes:\n  - {name: g1, cpus: 4, memory_mb: 1000,\n"
        "     gpus: [{model: a100, count: 1}, {model: x9000, count: 1}]}\n",
        encoding="utf-8",
    )
    assert node_catalogue_features(load_inventory(path).node("g1"), default_catalogue()) == ()


def test_render_adds_them_only_when_asked() -> None:
    lab = str(Path(__file__).parents[3] / "gres" / "examples" / "lab.yaml")
    args = ["render", "--inventory", lab, "--part", "nodes.conf"]
    plain = CliRunner().invoke(cli, args)
    asked = CliRunner().invoke(cli, [*args, "--catalogue-features"])
    assert plain.exit_code == 0, plain.output
    assert asked.exit_code == 0, asked.output
    assert "bf16" not in plain.output
    gpu1 = next(ln for ln in asked.output.splitlines() if ln.startswith("NodeName=gpu1 "))
    assert "Feature=a100,bf16,bf16_ge100,bf16_ge200,fp16," in gpu1
