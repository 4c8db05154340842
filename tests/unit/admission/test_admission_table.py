"""The Lua table: quoting that no name can break out of, deterministic output, digests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_plugins.admission.config import (
    Cluster,
    Kind,
    Limits,
    PolicyConfig,
    Pool,
    PriorityClass,
    Tenant,
    User,
)
from slurm_plugins.admission.table import build_table, lua_string, table_source, to_lua
from tests.unit.admission.luarun import install, lab_policy, lua, run, submit

HOSTILE = [
    "plain",
    "",
    '"',
    "\\",
    '\\"',
    '"]] os.exit(3) --[[',
    "]]",
    "[==[",
    "-- comment",
    "'; rm -rf ~'",
    "$(id)",
    "%s%d%n%%",
    "line\nbreak",
    "\r\n",
    "\x00nul",
    "\x01" + "23",
    "\x1b[31mred",
    "tab\tstop",
    "\x7f",
    "é漢🙂",
    "\u2028",
    "\ud800",  # a lone surrogate survives as its bytes
]

ECHO = """
local t = dofile(arg[1])
for _, s in ipairs(t) do
  io.write((string.gsub(s, ".", function(c) return string.format("%02x", string.byte(c)) end)))
  io.write("\\n")
end
"""


def lua_reads_back(tmp_path: Path, strings: list[str]) -> list[bytes]:
    src = tmp_path / "strings.lua"
    src.write_text("return " + to_lua(strings) + "\n", encoding="ascii")  # escapes only
    echo = tmp_path / "echo.lua"
    echo.write_text(ECHO)
    done = subprocess.run(
        [lua(), str(echo), str(src)], capture_output=True, text=True, check=True, timeout=30
    )
    return [bytes.fromhex(line) for line in done.stdout.split("\n")[: len(strings)]]


def test_hostile_strings_read_back_byte_for_byte(tmp_path: Path) -> None:
    got = lua_reads_back(tmp_path, HOSTILE)
    assert got == [s.encode("utf-8", "surrogatepass") for s in HOSTILE]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=12))
def test_any_text_reads_back(tmp_path_factory: pytest.TempPathFactory, strings: list[str]) -> None:
    got = lua_reads_back(tmp_path_factory.mktemp("prop"), strings)
    assert got == [s.encode("utf-8", "surrogatepass") for s in strings]


def test_literals_are_printable_ascii_on_one_line() -> None:
    for s in HOSTILE:
        lit = lua_string(s)
        assert lit.startswith('"')
        assert lit.endswith('"')
        assert all(0x20 <= ord(c) < 0x7F for c in lit)
        assert lit == '"' + lit[1:-1] + '"'
    assert lua_string("\x01" + "23") == '"\\00123"'
    assert lua_string('a"b\\') == '"a\\"b\\\\"'


def test_to_lua_values() -> None:
    assert to_lua(True) == "true"
    assert to_lua(7) == "7"
    assert to_lua(4.0) == "4"
    assert to_lua(0.25) == "0.25"
    assert to_lua([1, "a"]) == '{1, "a"}'
    assert to_lua({}) == "{}"
    assert to_lua({"b": 1, "a": {"c": False}}) == (
        '{\n  ["a"] = {\n    ["c"] = false,\n  },\n  ["b"] = 1,\n}'
    )
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="cannot write"):
            to_lua(bad)
    with pytest.raises(TypeError, match="keys must be strings"):
        to_lua({1: "x"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="cannot write a NoneType"):
        to_lua(None)  # type: ignore[arg-type]


def test_header_lines_cannot_end_the_comment() -> None:
    assert table_source({"a": 1}, ["ok"]).startswith("-- ok\nreturn {")
    with pytest.raises(ValueError, match="printable ASCII"):
        table_source({"a": 1}, ["x\nos.exit(1)"])


def test_table_and_digest_are_deterministic() -> None:
    a, b = build_table(lab_policy()), build_table(lab_policy())
    assert a == b
    assert table_source(a) == table_source(b)
    passing = build_table(lab_policy(), pass_through=True)
    assert passing["digest"] != a["digest"]
    assert passing["pass_through"] is True


def hostile_policy(name: str, user: str) -> PolicyConfig:
    """Built past the schema (which would refuse these names), as a portal bug might."""
    return PolicyConfig(
        cluster=Cluster(name, 32, {"gpu": Kind.GPU, "shard": Kind.GPU}, {}),
        pools=(Pool(name, Kind.GPU, (name,), True),),
        tenants=(
            Tenant(
                name=name,
                domain=name,
                account=name,
                pools=(),
                classes=(PriorityClass.MEDIUM,),
                default_class=PriorityClass.MEDIUM,
                shard_sizes=(8,),
                limits=Limits(time_min=60),
            ),
        ),
        users=(User(user, tenant=name),),
    )


@pytest.mark.parametrize(
    ("name", "user"),
    [
        ('cs"]] os.exit(3) --[[', "mal\\"),
        ("line\nbreak'; $(id)", "%s\x00"),
        ("é漢🙂%d", 'u"\r\n'),
    ],
)
def test_hostile_names_stay_data(tmp_path: Path, name: str, user: str) -> None:
    hook = install(tmp_path / "etc", hostile_policy(name, user))
    bad, good = run(
        hook,
        [
            submit("bad", user, default_account=None, tres_per_node="gres:shard:6"),
            submit("good", user, default_account=None, tres_per_node="gres:shard:8"),
        ],
    )
    assert bad.user == [
        f"aipool: shard:6 is not a size tenant {name} may use: ask for 8 shards (of 32 per GPU)"
    ]
    assert good.accepted
    assert good.set["account"] == name
    assert good.set["partition"] == name
    assert good.set["admin_comment"].startswith(f"aipool:tenant={name},domain={name},")
