"""The preset catalogue: definitions, model cards, and fine-tune / evaluate / serve job specs."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from portal.registry.cards import compose

CATALOG = Path(__file__).with_name("catalog.yaml")
RESULTS = Path(__file__).with_name("results")


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    modality: str
    task: str
    framework: str
    runtime: str | None
    mirror: str | None
    license: str
    summary: str
    input: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] = field(default_factory=dict)
    #: the hub revision (a commit or branch) the mirror holds
    revision: str = "main"
    #: the ModelScope model id, where it differs from ``mirror`` (the Hugging Face id)
    modelscope: str | None = None
    #: glob patterns of the files the mirror needs (``mirror fill``); all files when empty
    files: list[str] = field(default_factory=list)
    #: the upstream model page (its card, licence and results)
    source: str | None = None
    #: parameters, and the size of the mirrored files in MB
    params: int | None = None
    size_mb: float | None = None
    #: the upstream's published evaluation: ``{dataset, split, metrics: {name: value}, source}``
    published: dict[str, Any] | None = None

    @property
    def runnable(self) -> bool:
        return self.runtime is not None

    def results(self) -> dict[str, Any] | None:
        """The published evaluation of the preset (from its test tool), if any."""
        import json

        path = RESULTS / f"{self.name}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def reproduce(self) -> str:
        """The command that reproduces the published results: the test tool for the presets
        whose results it measured (``results/*.json``), the evaluation job's program on the
        mirrored weights for the others."""
        mirror = " --mirror MIRROR" if self.mirror else ""
        if self.results() is not None or not self.mirror:
            return (
                f"python -m portal.presets.runtime selftest --preset {self.name}{mirror} --out DIR"
            )
        return (
            f"python -m portal.presets.runtime evaluate --preset {self.name} "
            f"--mirror MIRROR --model MIRROR/{self.mirror} --out DIR"
        )

    def hub_url(self) -> str | None:
        """The upstream model page: ``source``, else the Hugging Face page of ``mirror``."""
        if self.source:
            return self.source
        return f"https://huggingface.co/{self.mirror}" if self.mirror else None

    def card(self) -> str:
        """The model card a preset's first version starts with, in the reader's language (the
        importer's: the card is then the model's own, to edit)."""
        from portal.presets.cardtext import body

        meta: dict[str, Any] = {
            "license": self.license,
            "pipeline_tag": self.task,
            "library_name": self.framework,
            "tags": [self.modality, "aipool-preset"],
        }
        if self.mirror:
            meta["base_model"] = self.mirror
        if self.published and self.published.get("dataset"):
            meta["datasets"] = [self.published["dataset"]]
        return compose(meta, body(self))

    def templates(self, python: str | None = None) -> dict[str, dict[str, Any]]:
        """Job specs (see jobspec) for fine-tuning, evaluating and serving; ``{model}``,
        ``{out}``, ``{mirror}`` and ``{conn}`` are filled by the portal when it submits."""
        py = python or sys.executable
        run = [py, "-m", "portal.presets.runtime"]
        common = ["--preset", self.name, "--mirror", "{mirror}"]
        gpu = self.framework in ("transformers", "diffusers") and not self.runnable
        resources: dict[str, Any] = {"cpus": 2, "time": "30m"}
        if gpu:
            resources["gpus"] = 1
        env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "2"}
        return {
            "fine_tune": {
                "name": f"ft-{self.name}",
                "command": [*run, "train", *common, "--base", "{model}", "--out", "{out}"],
                "resources": resources,
                "env": env,
            },
            "evaluate": {
                "name": f"eval-{self.name}",
                "command": [*run, "evaluate", *common, "--model", "{model}", "--out", "{out}"],
                "resources": {**resources, "time": "15m"},
                "env": env,
            },
            "serve": {
                "name": f"svc-{self.name}",
                "command": [*run, "serve", *common, "--model", "{model}", "--conn", "{conn}"],
                "resources": {**resources, "time": "1h"},
                "env": env,
            },
        }

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "modality": self.modality,
            "task": self.task,
            "framework": self.framework,
            "runnable": self.runnable,
            "mirror": self.mirror,
            "license": self.license,
            "summary": self.summary,
            "input_schema": self.input,
            "output_schema": self.output,
            "results": self.results(),
            "source": self.hub_url(),
            "revision": self.revision if self.mirror else None,
            "modelscope": self.modelscope,
            "files": self.files,
            "params": self.params,
            "size_mb": self.size_mb,
            "published": self.published,
            "reproduce": self.reproduce(),
        }


@cache
def presets() -> dict[str, Preset]:
    raw = yaml.safe_load(CATALOG.read_text())
    return {p["name"]: Preset(**p) for p in raw}


def get(name: str) -> Preset | None:
    return presets().get(name)
