"""Elastic nodes' powered-down spans recorded in accounting, idempotently, and the kWh they
saved in a period."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import yaml
from click.testing import CliRunner
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from accounting.cli import accounting
from accounting.power import import_power_off, saved_kwh
from accounting.power_models import PowerOffSpan
from slurm_plugins.power.plan import Event, EventKind
from slurm_plugins.power.program import append_events

H = 3600.0


def watts(node: str) -> float:
    return {"egpu1": 500.0}.get(node, 200.0)


def test_spans_are_recorded_once_and_closed_later(engine: Engine) -> None:
    first = [Event(0, "egpu1", EventKind.SUSPEND), Event(2 * H, "egpu1", EventKind.RESUME),
             Event(H, "enpu1", EventKind.SUSPEND)]  # fmt: skip
    with Session(engine) as s:
        done = import_power_off(s, "aipool", first, watts)
        s.commit()
    assert (done.added, done.closed) == (2, 0)
    later = [*first, Event(4 * H, "enpu1", EventKind.RESUME)]
    with Session(engine) as s:
        again = import_power_off(s, "aipool", later, watts)
        s.commit()
        assert (again.added, again.closed) == (0, 1)
        assert s.scalar(select(func.count()).select_from(PowerOffSpan)) == 2
    with engine.connect() as conn:
        saved = saved_kwh(conn, H, 10 * H, cluster="aipool")
    # egpu1: 1 h of its span inside the period at 500 W; enpu1: 3 h at 200 W
    assert saved == {"egpu1": Decimal("0.500000"), "enpu1": Decimal("0.600000")}


def test_an_open_span_counts_up_to_the_end_of_the_period(engine: Engine) -> None:
    with Session(engine) as s:
        import_power_off(s, "aipool", [Event(0, "egpu2", EventKind.SUSPEND)], watts)
        s.commit()
    with engine.connect() as conn:
        assert saved_kwh(conn, 0, 5 * H) == {"egpu2": Decimal("1.000000")}
        assert saved_kwh(conn, 0, 5 * H, cluster="other") == {}


def test_the_command_imports_the_log(engine: Engine, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    append_events(events, [Event(1.0, "egpu1", EventKind.SUSPEND)])
    config = tmp_path / "power.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "nodes": "egpu1",
                "driver": {"kind": "command", "resume": ["on"], "suspend": ["off"]},
                "events": str(events),
            }
        )
    )
    args = ["power-saved", "--db", str(engine.url), "--config", str(config), "--cluster", "c1"]
    out = CliRunner().invoke(accounting, args)
    assert out.exit_code == 0, out.output
    assert "1 spans added, 0 closed" in out.output
    again = CliRunner().invoke(accounting, args)
    assert "0 spans added, 0 closed" in again.output
