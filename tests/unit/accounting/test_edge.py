"""A command's database engine is closed with the command (Python 3.13 warns otherwise)."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner
from sqlalchemy import Engine, event

from accounting.edge import connect


def test_a_commands_engine_closes_its_connections_when_the_command_ends(tmp_path: Path) -> None:
    closed: list[object] = []
    seen: list[Engine] = []

    @click.command()
    def cmd() -> None:
        engine = connect(f"sqlite:///{tmp_path / 'a.db'}")
        event.listen(engine.pool, "close", lambda conn, rec: closed.append(conn))
        seen.append(engine)
        assert not closed  # still open while the command runs

    res = CliRunner().invoke(cmd, [])
    assert res.exit_code == 0, res.output
    assert len(seen) == 1
    assert closed, "the pooled SQLite connection was left to the garbage collector"


def test_an_engine_outside_a_command_is_the_callers_to_close(tmp_path: Path) -> None:
    engine = connect(f"sqlite:///{tmp_path / 'b.db'}")
    assert engine.pool.checkedin() == 1
    engine.dispose()
