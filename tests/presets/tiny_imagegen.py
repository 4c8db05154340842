"""Tiny random-weight models of the image generation and restoration presets' architectures,
written into an offline mirror as their hub repositories lay them out (no download).

Swin2SR: the transformers model and its image processor. Stable Diffusion: a diffusers
pipeline directory (``model_index.json``, ``unet/``, ``vae/``, ``text_encoder/``,
``tokenizer/``, ``scheduler/``) of a UNet2DConditionModel, an AutoencoderKL, a CLIPTextModel and
a byte-level BPE CLIP tokenizer; the inpainting UNet takes 9 input channels as the real one
does. CLIP (ViT) for the CLIP score. Each is well under 2 MB."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from portal.presets.catalog import get

# words the tiny tokenizer's merges cover; anything else falls back to single bytes
WORDS = ("a", "the", "of", "cat", "photo", "painting", "red", "blue", "sky", "tree", "house")


def _repo(mirror: Path, preset: str) -> Path:
    found = get(preset)
    if found is None or not found.mirror:
        raise KeyError(preset)
    path = mirror / found.mirror
    path.mkdir(parents=True, exist_ok=True)
    return path


def _seed() -> None:
    import torch

    torch.manual_seed(0)


# ---------------------------------------------------------------------- CLIP tokenizer
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte → printable character map, which CLIP's vocabulary uses."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


@cache
def _clip_vocab() -> tuple[dict[str, int], tuple[str, ...]]:
    """CLIP's vocabulary layout: the 256 byte symbols, the same with ``</w>``, the merges'
    results, then ``<|startoftext|>`` and ``<|endoftext|>``."""
    symbols = list(_bytes_to_unicode().values())
    vocab = [*symbols, *(s + "</w>" for s in symbols)]
    merges: list[str] = []
    for word in WORDS:
        parts = [*word[:-1], word[-1] + "</w>"]
        while len(parts) > 1:
            merges.append(f"{parts[0]} {parts[1]}")
            parts = [parts[0] + parts[1], *parts[2:]]
            if parts[0] not in vocab:
                vocab.append(parts[0])
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    unique_merges = tuple(dict.fromkeys(merges))
    return {token: i for i, token in enumerate(vocab)}, unique_merges


def _clip_tokenizer(path: Path) -> int:
    """vocab.json, merges.txt and the tokenizer's config, as CLIP repositories ship them;
    returns the vocabulary size."""
    from transformers import CLIPTokenizer

    vocab, merges = _clip_vocab()
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    tokenizer = CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt"))
    tokenizer.model_max_length = 77
    tokenizer.save_pretrained(path)
    return len(vocab)


def _text_config(vocab_size: int) -> dict[str, Any]:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": 77,
        "projection_dim": 16,
        "hidden_act": "gelu",
        "bos_token_id": vocab_size - 2,
        "eos_token_id": vocab_size - 1,
        "pad_token_id": vocab_size - 1,
    }


# ---------------------------------------------------------------------- Swin2SR
def swin2sr(mirror: Path) -> None:
    from transformers import (
        Swin2SRConfig,
        Swin2SRForImageSuperResolution,
        Swin2SRImageProcessor,
    )

    _seed()
    path = _repo(mirror, "swin2sr-superres")
    config = Swin2SRConfig(
        image_size=16,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=8,
        mlp_ratio=2.0,
        upscale=2,
        upsampler="pixelshuffle",
        img_range=1.0,
    )
    Swin2SRForImageSuperResolution(config).save_pretrained(path, safe_serialization=True)
    Swin2SRImageProcessor(do_rescale=True, do_pad=True, pad_size=8).save_pretrained(path)


# ---------------------------------------------------------------------- Stable Diffusion
def _pipeline(path: Path, unet_in: int, cls: str) -> None:
    import diffusers
    from diffusers import AutoencoderKL, PNDMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    _seed()
    vocab_size = _clip_tokenizer(path / "tokenizer")
    tokenizer = CLIPTokenizer.from_pretrained(path / "tokenizer")
    text = CLIPTextModel(CLIPTextConfig(**_text_config(vocab_size)))
    unet = UNet2DConditionModel(
        sample_size=16,  # 16x16 latents: 32x32 images
        in_channels=unet_in,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=(2, 4),
        use_linear_projection=True,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        block_out_channels=(8, 16),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        norm_num_groups=8,
        sample_size=64,
    )
    scheduler = PNDMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        skip_prk_steps=True,
        steps_offset=1,
    )
    pipeline = getattr(diffusers, cls)(
        vae=vae,
        text_encoder=text,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipeline.save_pretrained(path, safe_serialization=True)


def sd_text_to_image(mirror: Path) -> None:
    _pipeline(_repo(mirror, "sd-text-to-image"), 4, "StableDiffusionPipeline")


def sd_inpainting(mirror: Path) -> None:
    # the inpainting UNet reads the noisy latents, the mask and the masked image's latents
    _pipeline(_repo(mirror, "sd-inpainting"), 9, "StableDiffusionInpaintPipeline")


# ---------------------------------------------------------------------- CLIP (the CLIP score)
def clip(mirror: Path, repo: str = "openai/clip-vit-base-patch16") -> None:
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        CLIPTokenizer,
    )

    _seed()
    path = mirror / repo
    vocab_size = _clip_tokenizer(path)
    vision = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 32,
        "patch_size": 8,
        "projection_dim": 16,
    }
    config = CLIPConfig(
        text_config=_text_config(vocab_size), vision_config=vision, projection_dim=16
    )
    CLIPModel(config).save_pretrained(path, safe_serialization=True)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(
        image_processor=images, tokenizer=CLIPTokenizer.from_pretrained(path)
    ).save_pretrained(path)


def sd_style_transfer(mirror: Path) -> None:
    """The style-transfer preset reads the text-to-image preset's weights (img2img)."""
    repo = _repo(mirror, "sd-style-transfer")
    if not (repo / "model_index.json").is_file():
        _pipeline(repo, 4, "StableDiffusionPipeline")


BUILDERS: dict[str, Callable[[Path], None]] = {
    "swin2sr-superres": swin2sr,
    "sd-inpainting": sd_inpainting,
    "sd-text-to-image": sd_text_to_image,
    "sd-style-transfer": sd_style_transfer,
}
