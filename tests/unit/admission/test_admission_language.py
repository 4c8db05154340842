"""The admission hook refuses in the submitter's language: Chinese for a shell or a portal
reader in Chinese, English otherwise, with Slurm's own words (names, numbers) kept."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from slurm_plugins.admission.messages import MESSAGES, catalogue
from tests.unit.admission.luarun import install, run, submit
from tests.unit.admission.test_admission_hook import REFUSALS

CJK = re.compile(r"[\u4e00-\u9fff]")
ZH = {"LANG": "zh_CN.UTF-8"}
#: English words of the refusals that a Chinese reader must not meet (Slurm's words aside)
ENGLISH = re.compile(r"\b(tenant|user|asks|allows|partition|pool|priority|ask|use|per job)\b")


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("hook") / "etc")


def test_every_message_keeps_its_arguments_in_order_in_every_language() -> None:
    """Lua's string.format takes its arguments in order: a translation may move words, never
    an argument, nor drop or add one."""
    said = catalogue()
    for key, english in MESSAGES.items():
        wanted = re.findall(r"%[sd]", english)
        for lang, words in said.items():
            assert re.findall(r"%[sd]", words[key]) == wanted, (lang, key, words[key])
    assert said["zh"]["too_many_cards"] != said["en"]["too_many_cards"]


@pytest.mark.parametrize(
    ("name", "user", "fields", "english"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_every_refusal_speaks_chinese_to_a_chinese_shell(
    hook: Path, name: str, user: str, fields: dict[str, Any], english: str
) -> None:
    (out,) = run(hook, [submit(name, user, environment=ZH, **fields)])
    assert not out.accepted
    (said,) = out.user
    assert said.startswith("aipool: ")
    assert CJK.search(said), said
    assert not ENGLISH.search(said), said
    # Slurm's words and the numbers stay as they are
    for word in re.findall(r"--qos=\w+|\d+(?:\.\d+)?|\b(?:gpu|npu|cpu|cs101|vision)\b", english):
        assert word in said, (word, said)


@pytest.mark.parametrize(
    ("environment", "chinese"),
    [
        ({"LANG": "zh_CN.UTF-8"}, True),
        ({"LANG": "zh_TW.UTF-8"}, True),
        ({"LANG": "en_US.UTF-8"}, False),
        ({}, False),
        ({"LANG": "C"}, False),
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, True),
        ({"LC_ALL": "C", "LC_MESSAGES": "zh_CN.UTF-8"}, True),  # C says nothing of a language
        ({"LC_MESSAGES": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}, False),
        # the portal names its reader's language, whatever the job's shell would have
        ({"AIPOOL_LANG": "en", "LANG": "zh_CN.UTF-8"}, False),
        ({"AIPOOL_LANG": "zh_CN", "LANG": "en_US.UTF-8"}, True),
        (None, False),  # no environment at all (salloc, a modification)
    ],
)
def test_the_language_is_the_submitters(
    hook: Path, environment: dict[str, str] | None, chinese: bool
) -> None:
    (out,) = run(hook, [submit("x", "carol", environment=environment, time_limit=300)])
    (said,) = out.user
    assert bool(CJK.search(said)) is chinese, said
    expected = (
        "时间限制 5:00:00 超过了 4:00:00（租户 cs101 每个作业允许的上限）"
        if chinese
        else "time limit 5:00:00 is over the 4:00:00 tenant cs101 allows per job"
    )
    assert expected in said


def test_lists_are_joined_in_the_readers_words(hook: Path) -> None:
    (out,) = run(hook, [submit("q", "carol", environment=ZH, qos="high")])
    assert out.user == [
        "aipool: 优先级类别 high（--qos=high）不对 租户 cs101 开放；"
        "请使用 --qos=normal 或 --qos=low"
    ]
    (out,) = run(hook, [submit("p", "bob", environment=ZH, partition="debug")])
    assert "租户 vision 可使用 gpu、npu 和 cpu" in out.user[0]


def test_every_problem_is_named_at_once_in_chinese(hook: Path) -> None:
    (out,) = run(
        hook,
        [
            submit(
                "x",
                "carol",
                environment=ZH,
                qos="high",
                partition="gpu",
                tres_per_node="gres:shard:6",
                time_limit=600,
            )
        ],
    )
    said = out.user[0]
    assert said.count("；") >= 3
    for part in ("优先级类别 high", "shard:6", "时间限制 10:00:00"):
        assert part in said
