"""Reading specs from YAML or JSON text: one spec, a list, or several YAML documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from jobspec.codec import spec_to_data
from jobspec.errors import SpecError
from jobspec.model import Spec
from jobspec.schema import load_spec

MAX_BYTES = 1024 * 1024


class _StrictLoader(yaml.SafeLoader):
    """safe_load without duplicate keys (the last one would win silently) or aliases."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.constructor.ConstructorError(
                None, None, "YAML aliases (*name) are not allowed in job specs", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def parse_documents(text: str, *, fmt: str = "yaml") -> list[Any]:
    """The spec mappings in ``text`` (YAML documents or JSON), lists flattened."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise SpecError([f"spec file is larger than {MAX_BYTES // 1024} KiB"])
    try:
        if fmt == "json":
            docs = [json.loads(text)]
        else:
            docs = list(yaml.load_all(text, Loader=_StrictLoader))
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise SpecError([f"cannot read the spec: {exc}"]) from None
    out: list[Any] = []
    for doc in docs:
        if doc is None:
            continue
        out += doc if isinstance(doc, list) else [doc]
    if not out:
        raise SpecError(["the file holds no spec"])
    return out


def load_specs(text: str, *, fmt: str = "yaml") -> list[Spec]:
    """Every spec in ``text``; errors of several specs are prefixed ``jobs[i].``."""
    docs = parse_documents(text, fmt=fmt)
    specs: list[Spec] = []
    problems: list[str] = []
    for i, doc in enumerate(docs):
        try:
            specs.append(load_spec(doc))
        except SpecError as exc:
            problems += exc.prefixed(f"jobs[{i}]." if len(docs) > 1 else "").messages
    if problems:
        raise SpecError(problems)
    return specs


def load_spec_file(path: str | Path) -> list[Spec]:
    p = Path(path)
    fmt = "json" if p.suffix.lower() == ".json" else "yaml"
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([f"{p}: {exc}"]) from None
    return load_specs(text, fmt=fmt)


def spec_to_yaml(spec: Spec) -> str:
    return yaml.safe_dump(spec_to_data(spec), sort_keys=False, allow_unicode=True)


def spec_to_json(spec: Spec) -> str:
    return json.dumps(spec_to_data(spec), ensure_ascii=False, sort_keys=False)
