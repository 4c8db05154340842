"""The image-understanding programs on tiny random-weight models of their architectures in a
temporary mirror, on the CPU: evaluate (the one report shape), fine-tune (safetensors out),
and a served answer that fits the preset's output schema."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import jsonschema
import pytest

from portal.presets import runtime
from portal.presets.catalog import get
from portal.presets.programs import KINDS
from portal.presets.vision import HubVision, decode_image
from tests.presets.tiny_vision import BUILDERS

PRESETS = sorted(BUILDERS)
TASKS = {
    "vit-base-classifier": ("classification", {"accuracy", "f1", "precision", "recall"}),
    "xray-pneumonia": ("classification", {"accuracy", "f1", "precision", "recall"}),
    "detr-detector": ("object-detection", {"map", "map_50", "map_75"}),
    "segformer-segmenter": ("image-segmentation", {"miou", "pixel_accuracy"}),
    "dpt-depth": ("depth-estimation", {"abs_rel", "rmse", "delta1"}),
}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mirror")
    for name, build in BUILDERS.items():
        preset = get(name)
        assert preset is not None
        assert preset.mirror
        build(root / preset.mirror)
    return root


def kind(name: str, mirror: Path | None) -> HubVision:
    preset = get(name)
    assert preset is not None
    assert preset.runtime
    made = KINDS[preset.runtime](mirror)
    assert isinstance(made, HubVision)
    return made


def imported(tmp_path: Path, name: str) -> Path:
    """Version 1 as the portal imports it: a config.json naming the hub repository."""
    preset = get(name)
    assert preset is not None
    model = tmp_path / "v1"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"preset": name, "base": preset.mirror}))
    return model


def png_of(image: object) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")  # type: ignore[attr-defined]
    return base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize("name", PRESETS)
def test_evaluate_writes_the_report_of_its_task(name: str, mirror: Path, tmp_path: Path) -> None:
    program = kind(name, mirror)
    report = runtime.evaluate(program, imported(tmp_path, name), tmp_path / "eval")
    task, keys = TASKS[name]
    assert report["task"] == task
    assert set(report["metrics"]) == keys | {"samples"}
    assert report["metrics"]["samples"] == len(program.test_set()[0])
    for value in report["metrics"].values():
        assert value >= 0
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text()) == report
    # what the portal's refresher reads: the four fields, labels and confusion for classes only
    assert {"metrics", "per_class", "labels", "confusion"} <= set(report)
    if task == "classification":
        assert (tmp_path / "eval" / "confusion.png").read_bytes().startswith(b"\x89PNG")
        assert sum(map(sum, report["confusion"])) == report["metrics"]["samples"]
    else:
        assert report["labels"] == report["confusion"] == []


@pytest.mark.parametrize("name", PRESETS)
def test_fine_tune_then_serve_an_answer_of_the_output_schema(
    name: str, mirror: Path, tmp_path: Path
) -> None:
    program = kind(name, mirror)
    cfg = runtime.train(program, imported(tmp_path, name), tmp_path / "run")
    model = tmp_path / "run" / "model"
    assert {p.name for p in model.iterdir()} == {
        "config.json",
        "model.safetensors",
        "preprocessor_config.json",
    }
    assert cfg["preset"] == name
    loaded = program.load(model)  # its own weights: the mirror is not needed any more
    assert kind(name, None).source(model) == model
    x, _ = program.test_set()
    answer = program.respond(program.predict(loaded, program.parse({"image": png_of(x[0])})))
    preset = get(name)
    assert preset is not None
    jsonschema.validate(answer, preset.output)
    assert json.loads(json.dumps(answer)) == answer


def test_classifier_fine_tuning_learns_the_dataset_labels(mirror: Path, tmp_path: Path) -> None:
    program = kind("vit-base-classifier", mirror)
    data = tmp_path / "data"
    x, y = program.test_set()
    for i, (img, label) in enumerate(zip(x, y, strict=True)):
        (data / f"new-{label}").mkdir(parents=True, exist_ok=True)
        img.save(data / f"new-{label}" / f"{i}.png")
    cfg = runtime.train(program, imported(tmp_path, "vit-base-classifier"), tmp_path / "r", data)
    assert cfg["labels"] == ["new-circle", "new-square", "new-triangle"]
    assert cfg["trained_on"] == len(x)
    loaded = program.load(tmp_path / "r" / "model")
    assert set(loaded.id2label.values()) == set(cfg["labels"])


def test_depth_is_not_fine_tuned_and_says_so(mirror: Path, tmp_path: Path) -> None:
    program = kind("dpt-depth", mirror)
    cfg = runtime.train(program, imported(tmp_path, "dpt-depth"), tmp_path / "r")
    assert cfg["fine_tuned"] is False


def test_a_repository_missing_from_the_mirror_names_the_fill_command(tmp_path: Path) -> None:
    program = kind("detr-detector", tmp_path)
    with pytest.raises(FileNotFoundError, match="aipool models mirror fill detr-detector"):
        program.load(imported(tmp_path, "detr-detector"))


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (None, "base64-encoded PNG or JPEG"),
        ("not base64!", "base64-encoded PNG or JPEG"),
        (base64.b64encode(b"GIF89a not an image").decode(), "base64-encoded PNG or JPEG"),
        ("A" * (12 * 1024**2), "at most 8 MB"),
    ],
)
def test_bad_images_are_refused_clearly(image: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_image(image)


def test_an_image_as_a_data_url_is_read() -> None:
    from PIL import Image

    img = Image.new("RGB", (3, 2), (255, 0, 0))
    back = decode_image("data:image/png;base64," + png_of(img))
    assert back.size == (3, 2)
    assert back.getpixel((0, 0)) == (255, 0, 0)


@pytest.mark.parametrize("base", ["../../etc", "/etc/passwd", "a/../../b", "a b/c"])
def test_a_version_naming_no_hub_repository_is_refused(base: str, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"base": base}))
    with pytest.raises(ValueError, match="not a hub repository name"):
        kind("vit-base-classifier", tmp_path).source(tmp_path)


def test_a_versions_own_weights_are_safetensors_only(mirror: Path, tmp_path: Path) -> None:
    """A version holding only a pickle (pytorch_model.bin) is not read: its weights come from
    the mirror's repository, which the site filled."""
    model = imported(tmp_path, "xray-pneumonia")
    (model / "pytorch_model.bin").write_bytes(b"not read")
    program = kind("xray-pneumonia", mirror)
    assert program.source(model) == mirror / "nickmuchi/vit-finetuned-chest-xray-pneumonia"


def test_the_device_is_the_jobs_card_or_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    import torch

    from portal.presets.vision import device

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    assert device() == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # granted, but this build has no CUDA
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device() == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device() == "cuda"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "0")
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # not installed: import fails
    assert device() == "cpu"
    # torch_npu registers torch.npu when imported
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    monkeypatch.setattr(
        torch, "npu", types.SimpleNamespace(is_available=lambda: True), raising=False
    )
    assert device() == "npu"
