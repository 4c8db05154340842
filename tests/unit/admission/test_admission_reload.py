"""Loading the table: re-read on change without a restart, fail closed, atomic replacement."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurm_plugins.admission.config import LAB_POLICY, PolicyConfig, parse_policy
from slurm_plugins.admission.render import (
    HOOK_FILE,
    TABLE_FILE,
    render_hook,
    replace_atomically,
    write_files,
)
from tests.unit.admission.luarun import install, run, submit

CLOSED = (
    "aipool: job submission is closed: the admission policy could not be loaded; "
    "please tell the cluster administrators"
)


def lab_raw() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(LAB_POLICY.read_text())
    return copy.deepcopy(raw)


def wider_courses() -> PolicyConfig:
    raw = lab_raw()
    raw["tenants"]["cs101"]["shard_sizes"] = [4, 6, 8, 16, 32]
    return parse_policy(raw)


def staged(tmp_path: Path, text: str, name: str = "staged.lua") -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o644)
    return path


def at(clock: int, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "clock": clock}


def mv(src: Path, dst: Path, clock: int) -> dict[str, Any]:
    return {"op": "rename", "from": str(src), "to": str(dst), "clock": clock}


@pytest.mark.parametrize("no_posix", [False, True], ids=["stat", "no-lua-posix"])
def test_a_new_table_applies_within_a_second(tmp_path: Path, no_posix: bool) -> None:
    hook = install(tmp_path / "etc")
    new = staged(tmp_path, render_hook(wider_courses())[TABLE_FILE])
    six = submit("six", "carol", tres_per_node="gres:shard:6")
    before, same_second, next_second = run(
        hook,
        [at(100, six), mv(new, hook.parent / TABLE_FILE, 100), at(100, six), at(101, six)],
        no_posix=no_posix,
    )
    assert not before.accepted
    assert not same_second.accepted  # looked at once a second at most
    assert next_second.accepted, next_second.message


def test_without_a_table_only_root_may_submit(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc")
    table = hook.parent / TABLE_FILE
    aside = tmp_path / "aside.lua"
    carol, root, again = run(
        hook,
        [
            mv(table, aside, 100),
            submit("carol", "carol"),
            submit("root", "root"),
            mv(aside, table, 101),
            submit("carol again", "carol"),
        ],
    )
    assert carol.user == [CLOSED]
    assert carol.rc != 0
    assert any("cannot stat" in e for e in carol.errors)
    assert root.accepted
    assert root.set == {}
    assert again.accepted


def test_a_broken_table_keeps_the_previous_one(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc")
    table = hook.parent / TABLE_FILE
    broken = staged(tmp_path, "return {\n")
    wrong = staged(tmp_path, "return {format = 2}\n", "wrong.lua")
    six = submit("six", "carol", tres_per_node="gres:shard:6")
    eight = submit("eight", "carol", tres_per_node="gres:shard:8")
    outs = run(
        hook,
        [
            at(100, eight),
            mv(broken, table, 101),
            at(101, eight),
            at(102, six),
            mv(wrong, table, 103),
            at(103, eight),
        ],
    )
    first, after_break, still_checked, after_wrong = outs
    assert first.accepted
    assert after_break.accepted  # the last good table is still in force
    assert any("cannot load" in e for e in after_break.errors)
    assert not still_checked.accepted
    assert still_checked.errors == []  # the same problem is logged once
    assert after_wrong.accepted
    assert any("not an AIPool policy table of format 1" in e for e in after_wrong.errors)


def test_a_table_others_may_write_is_never_loaded(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc")
    table = hook.parent / TABLE_FILE
    (out,) = run(hook, [{"op": "chmod", "path": str(table), "mode": 0o664}, submit("c", "carol")])
    assert out.user == [CLOSED]
    assert any("writable by group or others" in e for e in out.errors)


def test_write_files_replaces_only_what_changed(tmp_path: Path) -> None:
    files = render_hook(parse_policy(lab_raw()))
    assert list(files) == [TABLE_FILE, HOOK_FILE]  # the table is in place before the hook
    assert write_files(files, tmp_path) == [TABLE_FILE, HOOK_FILE]
    assert write_files(files, tmp_path) == []
    newer = render_hook(wider_courses())
    assert write_files(newer, tmp_path) == [TABLE_FILE]
    assert sorted(p.name for p in tmp_path.iterdir()) == [TABLE_FILE, HOOK_FILE]
    assert (tmp_path / TABLE_FILE).stat().st_mode & 0o777 == 0o644


def test_a_replacement_is_newer_even_within_the_same_second(tmp_path: Path) -> None:
    path = tmp_path / "f.lua"
    replace_atomically(path, b"return 1\n")
    first = int(path.stat().st_mtime)
    replace_atomically(path, b"return 2\n")
    second = int(path.stat().st_mtime)
    replace_atomically(path, b"return 3\n")
    assert second > first
    assert int(path.stat().st_mtime) > second
    assert path.read_bytes() == b"return 3\n"


def test_a_failed_replacement_leaves_the_old_file_and_no_litter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.lua"
    replace_atomically(path, b"old")

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        replace_atomically(path, b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.lua"]


def test_a_table_that_would_run_code_cannot(tmp_path: Path) -> None:
    """The table is loaded as data: whoever may write it cannot reach os, io or require."""
    hook = install(tmp_path / "etc")
    table = hook.parent / TABLE_FILE
    mark = tmp_path / "ran"
    good = render_hook(parse_policy(lab_raw()))[TABLE_FILE]
    evil = f'os.execute("touch {mark}")\n' + good
    sneaky = f'local f = io.open("{mark}", "w")\n' + good
    sly = 'require("posix")\n' + good
    steps: list[dict[str, Any]] = []
    for clock, text in ((101, evil), (102, sneaky), (103, sly)):
        steps += [mv(staged(tmp_path, text, f"t{clock}.lua"), table, clock)]
        steps += [at(clock, submit(f"at {clock}", "carol"))]
    outs = run(hook, [at(100, submit("first", "carol")), *steps])
    assert not mark.exists()
    assert all(o.accepted for o in outs)  # the lab's table stays in force
    assert sum("cannot load" in e for o in outs for e in o.errors) == 3


def test_the_table_may_live_in_a_directory_of_its_own(tmp_path: Path) -> None:
    """``table_dir``: the portal writes the table where it may, the hook stays root's."""
    files = render_hook(parse_policy(lab_raw()), table_dir="admission")
    assert list(files) == [f"admission/{TABLE_FILE}", HOOK_FILE]
    etc = tmp_path / "etc"
    (etc / "admission").mkdir(parents=True)
    write_files(files, etc)
    (out,) = run(etc / HOOK_FILE, [submit("eight", "carol", tres_per_node="gres:shard:8")])
    assert out.accepted, out.errors
