"""A job spec's errors in the reader's language: every refusal of the spec tests has a
template in the catalogue, so the portal and ``aipool submit`` show it in Chinese with its
field path and values kept."""

from __future__ import annotations

import re
from typing import Any

import pytest
from click.testing import CliRunner

from jobspec.messages import TEMPLATES, in_words
from tests.unit.jobspec.conftest import errors_of, spec_data
from tests.unit.jobspec.test_jobspec_schema import REFUSED

CJK = re.compile(r"[\u4e00-\u9fff]")
PATH = re.compile(r"[\w.\[\]<>-]+: ")


def path_of(message: str) -> str:
    m = PATH.match(message)
    assert m, message
    return m.group(0)


@pytest.mark.parametrize(("fields", "expected"), REFUSED, ids=[e for _, e in REFUSED])
def test_every_refusal_reads_in_chinese(fields: dict[str, Any], expected: str) -> None:
    for message in errors_of(spec_data(**fields)):
        zh = in_words(message, "zh_CN")
        assert CJK.search(zh), message
        assert zh.startswith(path_of(message)), zh  # the field path is kept
        assert in_words(message, "en") == message


@pytest.mark.parametrize(
    ("message", "zh"),
    [
        (
            "name: '-x' is not allowed: use a letter, then letters, digits, '_', '.' or '-' "
            "(at most 63)",
            "name: '-x' 不允许：以字母开头，后接字母、数字、'_'、'.' 或 '-'（最多 63 个）",
        ),
        (
            "workdir: 'a b' is not allowed: must be an absolute path; use letters, digits, '.', "
            "'_', '-', '+', '@', '=', ',' and '/' only (no spaces, quotes, '$', '%' or '..')",
            "workdir: 'a b' 不允许：必须是绝对路径；只能使用字母",
        ),
        (
            "resources.gpus: GPU fraction 0.3 is not a multiple of 1/32; nearest valid sizes: "
            "9/32 (0.281), 5/16 (0.312)",
            "resources.gpus: GPU 份额 0.3 不是 1/32 的整数倍；最接近的有效大小：9/32 (0.281), "
            "5/16 (0.312)",
        ),
        (
            "wide: resources.gpus: 1.25 cards: Slurm 22.05 gives one job's shards from one card "
            "only; ask for whole cards or a share of one card (shares above one card need Slurm "
            "23.11 or later)",
            "wide: resources.gpus: 1.25 张卡：Slurm 22.05 只能从一张卡上分配一个作业的分片",
        ),
        ("jobs[1].name: Unknown field.", "jobs[1].name: 未知字段。"),
        ("something new", "something new"),
    ],
)
def test_values_and_paths_are_kept(message: str, zh: str) -> None:
    assert in_words(message, "zh_CN").startswith(zh)


def test_every_template_is_translated() -> None:
    untranslated = [t for t in TEMPLATES if in_words(t, "zh_CN") == t]
    assert untranslated == []


def test_aipool_submit_says_it_in_the_terminals_language(tmp_path: Any) -> None:
    from jobspec.cli import submit

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncommand: hostname\nresources: {gpus: -1}\n")
    runner = CliRunner()
    zh = runner.invoke(submit, [str(bad), "--dry-run"], env={"LANG": "zh_CN.UTF-8"})
    assert zh.exit_code == 1
    assert zh.output.startswith("错误：")  # click's own "Error:" too
    assert "resources.gpus: 不能为负数" in zh.output
    en = runner.invoke(submit, [str(bad), "--dry-run"], env={"LANG": "C.UTF-8", "LC_ALL": ""})
    assert en.output.startswith("Error: ")
    assert "resources.gpus: must not be negative" in en.output
