"""Cambricon MLU, Hygon DCU and Kunlunxin XPU: the SMI parsers against recorded output, the
inventory, the rendered GRES lines and the TaskProlog's visibility variables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gres.accelsmi import (
    SmiFormatError,
    normalise_accel_model,
    parse_cnmon_info,
    parse_hy_smi_json,
    parse_xpu_smi_query,
)
from gres.errors import InventoryError
from gres.inventory import load_inventory
from gres.render import render_all, render_task_prolog
from tests.unit.gres.test_gres_taskprolog import FAKE_SCONTROL, run_prolog

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"

ACC1 = """
version: 1
nodes:
  - name: acc1
    cpus: 4
    memory_mb: 4000
    mlus: [{model: mlu370, count: 2, memory_mib: 23308}]
    dcus: [{model: k100_ai, count: 2}]
    xpus: [{model: p800, count: 2}]
"""


def _read(path: str) -> str:
    return (DATA / path).read_text(encoding="utf-8")


def test_cnmon_5_cards() -> None:
    cards = parse_cnmon_info(_read("cnmon/mlu370-x4.txt"))
    assert [(c.index, c.name, c.model, c.health) for c in cards] == [
        (0, "MLU370-X4", "mlu370", "Good"),
        (1, "MLU370-X4", "mlu370", "Good"),
    ]
    first = cards[0]
    assert (first.memory_total_mib, first.memory_used_mib) == (23308, 17320)
    assert (first.util_percent, first.power_w, first.temperature_c) == (66.0, 44.0, 78.0)


def test_cnmon_4_without_health_or_chip_temperature() -> None:
    (card,) = parse_cnmon_info(_read("cnmon/mlu370-s4-v4.txt"))
    assert (card.model, card.health, card.temperature_c, card.memory_used_mib) == (
        "mlu370",
        "",
        49.0,
        4096,
    )


def test_hy_smi_json() -> None:
    cards = parse_hy_smi_json(_read("hy-smi/k100-ai.json"))
    assert [(c.index, c.model, c.memory_total_mib, c.memory_used_mib) for c in cards] == [
        (0, "k100_ai", 65520, 2),
        (1, "k100_ai", 65520, 2),
    ]
    assert (cards[1].power_w, cards[1].temperature_c, cards[1].util_percent) == (77.0, 36.0, 0.0)


def test_hy_smi_json_with_text_around_the_object() -> None:
    text = "WARNING: something\n" + _read("hy-smi/k100-ai.json") + "\n====\n"
    assert len(parse_hy_smi_json(text)) == 2


def test_xpu_smi_query() -> None:
    (card,) = parse_xpu_smi_query(_read("xpu-smi/p800-query.txt"))
    assert (card.index, card.name, card.model, card.memory_total_mib) == (
        0,
        "P800 PCIe",
        "p800",
        98304,
    )
    assert (card.power_w, card.temperature_c, card.ecc_uncorrected) == (76.0, 46.0, 0)


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_cnmon_info, "cnmon: command failed\n", "no 'Card <n>' block"),
        (parse_cnmon_info, "Card 0\n    Driver : v5\n", "card 0: no Product Name"),
        (
            parse_cnmon_info,
            "Card 3\n    Product Name : MLU370-X8\n    Physical Memory Usage :\n"
            "        Total : N/A\n",
            "card 3: no memory size",
        ),
        (parse_hy_smi_json, "no json here", "no JSON object"),
        (parse_hy_smi_json, '{"card0": {"Card Series": "K100"', "not valid JSON"),
        (parse_hy_smi_json, '{"system": {}}', "no 'card<n>' entry"),
        (parse_hy_smi_json, '{"card0": {"vram Total Memory (MiB)": "1"}}', "no Card Series"),
        (parse_xpu_smi_query, "==============XPUSMI LOG==============\n", "no 'XPU <bus id>'"),
        (
            parse_xpu_smi_query,
            "XPU 00000000:01:00.0\n    Product Name : P800\n",
            "no Minor Number",
        ),
    ],
)
def test_malformed_output_is_refused(parse, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SmiFormatError, match=message):
        parse(text)


@pytest.mark.parametrize("parse", [parse_cnmon_info, parse_hy_smi_json, parse_xpu_smi_query])
def test_no_output_means_no_cards(parse) -> None:  # type: ignore[no-untyped-def]
    assert parse("  \n") == []


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("MLU370-X8", "mlu370"),
        ("MLU590-H8", "mlu590"),
        ("K100_AI", "k100_ai"),
        ("P800 PCIe", "p800"),
        ("R200", "r200"),
        ("", ""),
    ],
)
def test_model_names(name: str, model: str) -> None:
    assert normalise_accel_model(name) == model


def test_inventory_renders_typed_gres_with_device_files() -> None:
    rendered = render_all(load_inventory(ACC1).with_device_dir("/var/lib/lab/dev"))
    assert rendered["gres.conf"].splitlines()[2:] == [
        "NodeName=acc1 Name=mlu Type=mlu370 File=/var/lib/lab/dev/cambricon_dev[0-1]",
        "NodeName=acc1 Name=dcu Type=k100_ai File=/var/lib/lab/dev/renderD[128-129]",
        "NodeName=acc1 Name=xpu Type=p800 File=/var/lib/lab/dev/xpu[0-1]",
    ]
    assert "Gres=mlu:mlu370:2,dcu:k100_ai:2,xpu:p800:2" in rendered["nodes.conf"]
    assert "Feature=dcu,k100_ai,mlu,mlu370,p800,xpu" in rendered["nodes.conf"]
    assert rendered["GresTypes"] == "dcu,mlu,xpu"
    assert rendered["AccountingStorageTRES"] == (
        "gres/mlu,gres/mlu:mlu370,gres/dcu,gres/dcu:k100_ai,gres/xpu,gres/xpu:p800"
    )


def test_dcu_render_nodes_live_in_dri_under_dev() -> None:
    inv = load_inventory(ACC1)
    node = inv.node("acc1")
    assert [a.device for a in node.accels_of("dcu")] == [
        "/dev/dri/renderD128",
        "/dev/dri/renderD129",
    ]
    assert [a.device for a in node.accels_of("mlu")] == [
        "/dev/cambricon_dev0",
        "/dev/cambricon_dev1",
    ]
    assert load_inventory(inv.to_yaml()) == inv


def test_inventory_round_trips_through_yaml_on_a_lab_dir() -> None:
    inv = load_inventory(ACC1).with_device_dir("/var/lib/lab/dev")
    assert load_inventory(inv.to_yaml()) == inv


def test_inventory_errors_name_the_entry() -> None:
    bad = ACC1.replace("xpus: [{model: p800, count: 2}]", "xpus: [{model: P800, count: 0}]")
    with pytest.raises(InventoryError) as err:
        load_inventory(bad)
    text = str(err.value)
    assert "nodes[0].xpus[0].model" in text
    assert "nodes[0].xpus[0].count" in text


def test_taskprolog_exports_each_runtime_variable(tmp_path: Path) -> None:
    script = tmp_path / "taskprolog.sh"
    script.write_text(render_task_prolog(load_inventory(ACC1)))
    script.chmod(0o755)
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE_SCONTROL.format(python=sys.executable))
    fake.chmod(0o755)
    out, _ = run_prolog(script, "acc1", "mlu-and-dcu.txt")
    assert out.splitlines() == ["export MLU_VISIBLE_DEVICES=0,1", "export HIP_VISIBLE_DEVICES=1"]
