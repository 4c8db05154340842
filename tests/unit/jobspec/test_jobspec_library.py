"""Templates (named, with overrides) and the recorded spec of every job (re-run)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from jobspec.errors import LibraryError, SpecError
from jobspec.library import History, Templates, merge, parse_override
from tests.unit.jobspec.conftest import make


def test_merge_is_deep_for_mappings_only() -> None:
    base = {"a": {"b": 1, "c": [1]}, "d": 1}
    assert merge(base, {"a": {"c": [2]}, "e": 2}) == {"a": {"b": 1, "c": [2]}, "d": 1, "e": 2}
    assert base == {"a": {"b": 1, "c": [1]}, "d": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("resources.gpus=0.5", {"resources": {"gpus": 0.5}}),
        ("name=run-2", {"name": "run-2"}),
        ("command=[python3, x.py]", {"command": ["python3", "x.py"]}),
        ("env.A=", {"env": {"A": ""}}),
        ("env.A={unclosed", {"env": {"A": "{unclosed"}}),
    ],
)
def test_overrides(text: str, expected: dict[str, object]) -> None:
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["nothing", "a..b=1", "a b=1", "=1"])
def test_bad_overrides(text: str) -> None:
    with pytest.raises(SpecError, match=r"key\.subkey=value"):
        parse_override(text)


def test_templates_save_list_and_instantiate(tmp_path: Path) -> None:
    lib = Templates(tmp_path / "t")
    assert lib.names() == []
    lib.save("train", make(resources={"gpus": 1}, env={"A": "1"}))
    lib.save("partial", {"command": "python3 x.py", "resources": {"gpus": 0.5}})
    assert lib.names() == ["partial", "train"]
    spec = lib.instantiate(
        "train", {"resources": {"gpus": "1/4"}, "env": {"B": "2"}}, new_name="train-small"
    )
    assert spec.name == "train-small"
    assert spec.resources.gpus == Fraction(1, 4)
    assert spec.env == {"A": "1", "B": "2"}
    assert lib.instantiate("partial", {"name": "p"}).resources.gpus == Fraction(1, 2)
    with pytest.raises(SpecError, match="name: Missing data"):
        lib.instantiate("partial")


def test_template_errors(tmp_path: Path) -> None:
    lib = Templates(tmp_path)
    with pytest.raises(LibraryError, match="no template named 'x'"):
        lib.raw("x")
    with pytest.raises(LibraryError, match="not allowed"):
        lib.save("../evil", make())
    (tmp_path / "two.yaml").write_text("- {name: a}\n- {name: b}\n")
    with pytest.raises(LibraryError, match="exactly one spec"):
        lib.raw("two")


def test_history_records_and_rebuilds(tmp_path: Path) -> None:
    history = History(tmp_path)
    spec = make(dependencies={"afterok": [7]}, resources={"gpus": "1/8"})
    path = history.record("lab", 42, spec)
    assert json.loads(path.read_text())["spec"]["name"] == "hello"
    assert history.has("lab", 42)
    assert not history.has("lab", 43)
    assert history.spec("lab", 42) == spec
    rerun = history.rerun_spec("lab", 42, {"resources": {"gpus": 1}})
    assert rerun.dependencies == ()
    assert rerun.resources.gpus == 1


def test_history_errors(tmp_path: Path) -> None:
    history = History(tmp_path)
    with pytest.raises(LibraryError, match="no recorded spec for job 1"):
        history.spec("lab", 1)
    with pytest.raises(LibraryError, match="cluster name"):
        history.record("../x", 1, make())
    with pytest.raises(LibraryError, match="positive integer"):
        history.has("lab", 0)
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "5.json").write_text('{"spec": {"name": "x"}}')
    with pytest.raises(LibraryError, match="no longer valid"):
        history.spec("lab", 5)
    (tmp_path / "lab" / "6.json").write_text("{broken")
    with pytest.raises(LibraryError, match=r"6\.json"):
        history.spec("lab", 6)
