"""Tiny random-weight models of the image-understanding presets' architectures, written into a
mirror as their hub repositories lay them out (config.json, model.safetensors and the image
processor's preprocessor_config.json), from small configurations: nothing is downloaded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

SHAPES = {0: "circle", 1: "square", 2: "triangle"}
SCENE = {0: "background", 1: "circle", 2: "square"}
XRAY = {0: "NORMAL", 1: "PNEUMONIA"}


def _labels(names: dict[int, str]) -> dict[str, Any]:
    return {"id2label": dict(names), "label2id": {v: k for k, v in names.items()}}


def _save(model: Any, processor: Any, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)


def _vit(names: dict[int, str]) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

        config = ViTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            **_labels(names),
        )
        processor = ViTImageProcessor(size={"height": 32, "width": 32})
        _save(ViTForImageClassification(config), processor, path)

    return build


def detr(path: Path) -> None:
    from transformers import DetrConfig, DetrForObjectDetection, DetrImageProcessor, ResNetConfig

    backbone = ResNetConfig(
        embedding_size=8,
        hidden_sizes=[8, 16, 16, 32],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage4"],
    )
    config = DetrConfig(
        backbone_config=backbone,
        use_pretrained_backbone=False,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        num_queries=10,
        **_labels(SHAPES),
    )
    processor = DetrImageProcessor(size={"shortest_edge": 64, "longest_edge": 64})
    _save(DetrForObjectDetection(config), processor, path)


def segformer(path: Path) -> None:
    from transformers import (
        SegformerConfig,
        SegformerForSemanticSegmentation,
        SegformerImageProcessor,
    )

    config = SegformerConfig(
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[8, 16],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=16,
        **_labels(SCENE),
    )
    processor = SegformerImageProcessor(size={"height": 64, "width": 64})
    _save(SegformerForSemanticSegmentation(config), processor, path)


def dpt(path: Path) -> None:
    from transformers import DPTConfig, DPTForDepthEstimation, DPTImageProcessor

    config = DPTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        backbone_out_indices=[0, 1, 2, 3],
        neck_hidden_sizes=[8, 16, 16, 32],
        fusion_hidden_size=16,
        head_in_index=-1,
    )
    processor = DPTImageProcessor(
        size={"height": 32, "width": 32}, keep_aspect_ratio=False, ensure_multiple_of=8
    )
    _save(DPTForDepthEstimation(config), processor, path)


def _seeded(build: Callable[[Path], None]) -> Callable[[Path], None]:
    """The same random weights on every run, so a test's numbers repeat."""

    def seeded(path: Path) -> None:
        import torch

        torch.manual_seed(0)
        build(path)

    return seeded


BUILDERS: dict[str, Callable[[Path], None]] = {
    "vit-base-classifier": _seeded(_vit(SHAPES)),
    "xray-pneumonia": _seeded(_vit(XRAY)),
    "detr-detector": _seeded(detr),
    "segformer-segmenter": _seeded(segformer),
    "dpt-depth": _seeded(dpt),
}
"""Preset name → a function writing its tiny model into ``<mirror>/<repo>``."""
