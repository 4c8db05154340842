"""The one name rule (jobspec.names): any script's letters and digits, `_ . -`, nothing a
shell, a file name, a Slurm column or a bidirectional trick could use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from marshmallow import ValidationError

from jobspec.names import DOCUMENTED, MAX_NAME, NAME_RULE, Name, is_name
from jobspec.options import labels
from jobspec.schema import load_spec

ACCEPTED = [
    "训练-四分之一",
    "resnet-四分之一-quarter",
    "resnet50",
    "3d-unet",
    "a",
    "模型.v2_最终",
    "データセット",
    "नमस्ते",  # combining marks after the first letter
    "Ünïcödé",
    "x" * MAX_NAME,
    "训" * MAX_NAME,  # 192 bytes in UTF-8
    "\uff11\uff12\uff13abc",  # full-width digits are digits
]

REFUSED = [
    "",
    " ",
    "训练 四分之一",  # spaces: a column of squeue and sacct, part of a file name
    "训练\n四分之一",
    "a\nb",
    "a\rb",
    "a\tb",
    "a\x00b",
    "a\x1bb",
    "a\x7f",
    "a\u2028b",
    "a\u0085b",
    "abc\u202edcba",  # right-to-left override
    "a\u200db",  # zero width joiner
    "$(id)",
    "a$(id)",
    "`id`",
    "a;rm -rf ~",
    "a'b",
    'a"b',
    "a/b",
    "../x",
    "a%j",
    "a,b",
    "a=b",
    "a#b",
    "-x",
    ".hidden",
    "_x",
    "\u0301a",  # a combining mark first
    "2024",  # a job id, not a name
    "٢٠٢٤",  # digits of another script are digits too
    "x" * (MAX_NAME + 1),
    "\U00020000" * MAX_NAME,  # 256 bytes in UTF-8: more than slurmdbd's TINYTEXT
    "e\u0301",  # not composed (NFC is "é")
    "a\ud800",  # a lone surrogate
    "训练，四分之一",  # full-width punctuation
    "😀",
]


@pytest.mark.parametrize("value", ACCEPTED)
def test_accepted(value: str) -> None:
    assert is_name(value)
    assert Name()(value) == value


@pytest.mark.parametrize("value", REFUSED, ids=[ascii(v)[:40] for v in REFUSED])
def test_refused(value: str) -> None:
    assert not is_name(value)
    with pytest.raises(ValidationError) as info:
        Name()(value)
    assert info.value.messages == [NAME_RULE]


@pytest.mark.parametrize("value", [None, 5, b"abc", ["a"]])
def test_not_text(value: object) -> None:
    assert not is_name(value)


@given(st.text(max_size=80))
def test_a_name_is_safe_everywhere_it_goes(value: str) -> None:
    """Whatever passes is one short line of letters, marks, digits and `_ . -` that a file
    name, an argv item and slurmdbd's column all hold."""
    if not is_name(value):
        return
    assert value == value.strip()
    assert value.isprintable()
    assert not set(value) & set(" /\\%$`'\";,=#\n\r\t\x00")
    assert len(value) <= MAX_NAME
    assert len(value.encode()) <= 255
    assert not value.isdigit()


@given(st.from_regex(DOCUMENTED, fullmatch=True))
def test_every_name_the_api_document_admits_is_a_name(value: str) -> None:
    """OpenAPI's pattern is a part of the rule: a client generating names from the document
    (schemathesis does) is never refused."""
    assert is_name(value)


@pytest.mark.parametrize("value", ["tenancy/groups.html", "1234", "_x", "a b", "训练 1"])
def test_the_api_document_refuses_what_the_rule_refuses(value: str) -> None:
    assert not DOCUMENTED.match(value)
    assert not is_name(value)


def test_spec_takes_a_chinese_name_and_renders_it() -> None:
    spec = load_spec({"name": "训练-四分之一", "command": "echo hi"})
    assert spec.name == "训练-四分之一"
    # the labels' grammar stays ASCII: the name lives in the job's name alone
    assert "name" not in labels(spec)
    assert labels(load_spec({"name": "train", "command": "echo hi"}))["name"] == "train"


def test_a_chinese_name_renders_as_one_argv_item_and_a_quoted_word() -> None:
    import subprocess

    from jobspec.submit import plan

    name = "训练-四分之一"
    [(_, out)] = plan([load_spec({"name": name, "command": "echo hi"})])
    assert f"--job-name={name}" in out.argv
    assert any(a.startswith("--output=") and a.endswith(f"{name}-%j.out") for a in out.argv)
    assert not any(a.startswith("--comment=") and name in a for a in out.argv)
    done = subprocess.run(
        ["bash", "-n"], input=out.script, text=True, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"AIPOOL_JOB_NAME={name}" in out.script or f"AIPOOL_JOB_NAME='{name}'" in out.script
