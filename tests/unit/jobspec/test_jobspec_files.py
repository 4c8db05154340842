"""Reading spec files: YAML documents, lists, JSON; strict YAML; round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobspec.errors import SpecError
from jobspec.files import load_spec_file, load_specs, spec_to_json, spec_to_yaml
from tests.unit.jobspec.conftest import DATA


def test_documents_and_lists() -> None:
    text = "name: a\ncommand: x\n---\n- {name: b, command: y}\n- {name: c, command: z}\n---\n"
    assert [s.name for s in load_specs(text)] == ["a", "b", "c"]
    assert [s.name for s in load_specs('[{"name": "j", "command": "x"}]', fmt="json")] == ["j"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\nname: b\ncommand: x\n", "duplicate key 'name'"),
        ("base: &b {gpus: 1}\nresources: *b\n", "YAML aliases"),
        ("name: [", "cannot read the spec"),
        ("", "the file holds no spec"),
        ("---\n---\n", "the file holds no spec"),
    ],
)
def test_unreadable(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_specs(text)


def test_errors_of_several_specs_name_the_spec() -> None:
    with pytest.raises(SpecError) as info:
        load_specs("- {name: ok, command: x}\n- {name: 'bad name', command: x}\n")
    assert info.value.messages[0].startswith("jobs[1].name: 'bad name' is not allowed")


def test_too_large() -> None:
    with pytest.raises(SpecError, match="larger than"):
        load_specs("#" * (1024 * 1024 + 1))


@pytest.mark.parametrize("path", sorted((DATA / "specs").glob("*.yaml")), ids=lambda p: p.stem)
def test_examples_round_trip_through_yaml_and_json(path: Path) -> None:
    for spec in load_spec_file(path):
        assert load_specs(spec_to_yaml(spec)) == [spec]
        assert load_specs(spec_to_json(spec), fmt="json") == [spec]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="No such file"):
        load_spec_file(tmp_path / "nope.yaml")
