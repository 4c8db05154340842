"""What the language generation presets share: a program over a hub repository of the
offline mirror, loaded with transformers, fine-tuned a few steps, saved as safetensors.

Weights come only from the offline mirror (``<mirror>/<repo>``) or from a fine-tuned model
version, which holds them itself (``model.safetensors`` and the tokenizer's files); a fine-tune
writes safetensors and JSON, never pickles. A job runs on the card Slurm gave it (CUDA, or
Ascend through ``torch_npu`` where it is installed) and on the CPU otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import yaml

from portal.presets.devices import device, hub_weights
from portal.presets.kinds import DATA, Kind, _config
from translations import N_

#: the bundled samples (train and test splits) of every generation task
SAMPLES = DATA / "generation.yaml"
#: generation lengths: what an evaluation asks for, and the most a request may ask for
EVAL_TOKENS = 64
MAX_TOKENS = 256
MAX_TEXT = 10_000


@cache
def samples() -> dict[str, Any]:
    return yaml.safe_load(SAMPLES.read_text())  # type: ignore[no-any-return]


def read_jsonl(path: Path, fields: Sequence[str]) -> list[dict[str, Any]]:
    """The ``*.jsonl`` rows of a dataset version that have every field in ``fields``."""
    rows: list[dict[str, Any]] = []
    for file in sorted(path.glob("*.jsonl")):
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or any(f not in row for f in fields):
                raise ValueError(f"{file.name}:{n}: a JSON object with {', '.join(fields)}")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no *.jsonl lines with {', '.join(fields)}")
    return rows


def settings(model: Path) -> dict[str, Any]:
    """A version's own settings: ``aipool.json`` of a fine-tune, else the ``config.json`` a
    preset's first version has (``{"preset", "base"}`` and optional ``steps``, ``lr``)."""
    own = model / "aipool.json"
    if own.is_file():
        return json.loads(own.read_text())  # type: ignore[no-any-return]
    return {} if any(model.glob("*.safetensors")) else _config(model)


def token_limit(net: Any, asked: int) -> int:
    """``asked``, within the model's own ``max_new_tokens`` where its generation config sets
    one (a site caps a slow model there)."""
    own = getattr(getattr(net, "generation_config", None), "max_new_tokens", None)
    return min(asked, int(own)) if own else asked


def tokens_asked(body: dict[str, Any], default: int) -> int:
    value = body.get("max_new_tokens", default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise ValueError(N_("max_new_tokens: a whole number from 1 to 256."))
    return value


def text_field(body: dict[str, Any], name: str, message: str) -> str:
    """``body[name]``, a text of 1 to ``MAX_TEXT`` characters; else ``message``."""
    value = body.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise ValueError(message)
    return value


class HubKind(Kind):
    """A preset whose weights are a hub repository in the mirror, loaded with transformers."""

    preset: ClassVar[str]
    repo: ClassVar[str]
    auto: ClassVar[str]  # the transformers Auto class of the model
    #: what ``evaluate`` reports under ``task``
    task: ClassVar[str]
    labels: ClassVar[tuple[str, ...]] = ()

    def weights(self, model: Path) -> Path:
        """Where the weights are: the version itself when it holds them (a fine-tune), else
        the mirror's copy of the repository its configuration names."""
        if any(model.glob("*.safetensors")):
            return model
        return hub_weights(self.mirror, str(settings(model).get("base", self.repo)), self.preset)

    def load(self, model: Path) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        import transformers

        path = self.weights(model)
        where = device()
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        # float32 on the CPU (bf16 matmuls are slow there); the file's own type on a card
        dtype = torch.float32 if where == "cpu" else "auto"
        net = getattr(transformers, self.auto).from_pretrained(path, dtype=dtype)
        return tokenizer, net.to(where).eval()

    def fine_tune(self, loaded: Any, batches: list[dict[str, Any]], steps: int, lr: float) -> float:
        """A few optimiser steps over ``batches`` (cycled); the last loss."""
        import torch

        _, net = loaded
        torch.manual_seed(0)
        optimiser = torch.optim.AdamW(net.parameters(), lr=lr)
        net.train()
        loss = torch.tensor(float("nan"))
        for step in range(steps):
            batch = {k: v.to(net.device) for k, v in batches[step % len(batches)].items()}
            loss = net(**batch).loss
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
        net.eval()
        return round(float(loss.detach()), 4)

    def save(self, loaded: Any, out: Path, cfg: dict[str, Any]) -> dict[str, Any]:
        tokenizer, net = loaded
        net.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        (out / "aipool.json").write_text(json.dumps(cfg, indent=2, ensure_ascii=False))
        return cfg

    def train_pairs(self, data: Path | None) -> tuple[list[Any], list[Any]]:
        if data is not None:
            return self.from_directory(data)
        return self.split("train")

    def split(self, name: str) -> tuple[list[Any], list[Any]]:
        raise NotImplementedError

    def test_set(self) -> tuple[list[Any], list[Any]]:
        return self.split("test")

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        cfg = {"steps": 8, "lr": 5e-5, **settings(base)}
        loaded = self.load(base)
        x, y = self.train_pairs(data)
        steps, lr = int(cfg["steps"]), float(cfg["lr"])
        loss = self.fine_tune(loaded, self.batches(loaded, x, y), steps, lr)
        result = {
            "preset": self.preset,
            "base": str(cfg.get("base", self.repo)),
            "steps": steps,
            "lr": lr,
            "trained_on": len(x),
            "loss": loss,
        }
        return self.save(loaded, out, result)

    def batches(self, loaded: Any, x: Sequence[Any], y: Sequence[Any]) -> list[dict[str, Any]]:
        raise NotImplementedError
