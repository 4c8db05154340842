"""The label comment: written only within its grammar, read back exactly, and a hostile
comment never yields a label that carries a separator or a shell word."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_plugins.client import labels
from slurm_plugins.client.labels import LabelError, decode, encode

KEYS = st.from_regex(labels.KEY, fullmatch=True)
VALUES = st.from_regex(labels.VALUE, fullmatch=True)


def test_round_trip_keeps_order() -> None:
    written = encode({"name": "train", "anti_affinity": "sweep-1", "gang_size": "3"})
    assert written == "aipool:name=train,anti_affinity=sweep-1,gang_size=3"
    assert list(decode(written).items()) == [
        ("name", "train"),
        ("anti_affinity", "sweep-1"),
        ("gang_size", "3"),
    ]
    assert encode({}) == "aipool:"
    assert decode("aipool:") == {}


@given(st.dictionaries(KEYS, VALUES, max_size=8))
def test_every_label_map_in_the_grammar_reads_back_as_written(written: dict[str, str]) -> None:
    assert decode(encode(written)) == written


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("name", "a,b"),
        ("name", "a=b"),
        ("name", "$(id)"),
        ("name", "'; rm -rf ~'"),
        ("name", "x\ny"),
        ("name", "名字"),
        ("name", ""),
        ("name", "x" * 65),
        ("bad key", "x"),
        ("1st", "x"),
        ("k=v", "x"),
        ("", "x"),
    ],
)
def test_writing_a_hostile_label_is_refused_by_name(key: str, value: str) -> None:
    with pytest.raises(LabelError, match="label"):
        encode({key: value})


@pytest.mark.parametrize(
    ("comment", "read"),
    [
        (None, {}),
        ("", {}),
        ("pin=node2", {}),
        ("AIPOOL:name=x", {}),
        (" aipool:name=x", {}),
        ("aipool: group = g_2 ,name=x", {"group": "g_2", "name": "x"}),  # as the hook reads it
        ("aipool:name=a,name=b", {"name": "b"}),  # the later one wins, as in the hook
        ("aipool:name=$(id),gang=g1", {"gang": "g1"}),
        ("aipool:name='; rm -rf ~',x=1", {"x": "1"}),
        ("aipool:k=v=w,j=1", {"j": "1"}),
        ("aipool:=v,k,,j=", {}),
        ("aipool:name=a\nb,gang=g1", {"gang": "g1"}),
        ("aipool:jupyter=1#,gang=g1", {"gang": "g1"}),
        ("aipool:名=x,name=名字", {}),
    ],
)
def test_reading_leaves_out_what_is_outside_the_grammar(
    comment: str | None, read: dict[str, str]
) -> None:
    assert decode(comment) == read


@given(st.text(max_size=200))
def test_reading_any_comment_never_fails_nor_yields_a_separator(text: str) -> None:
    for comment in (text, "aipool:" + text):
        for key, value in decode(comment).items():
            assert labels.KEY.fullmatch(key)
            assert labels.VALUE.fullmatch(value)
            assert not {",", "=", " ", "\n"} & set(key + value)
