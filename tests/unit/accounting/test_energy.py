"""Energy per job: power samples integrated per job and node, imported once, summed in
reports beside card-hours. The samples are files in the node agent's format
(tests/data/accounting/energy/), with a gap where the agent was down and lab (fake) figures."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from accounting.cli import accounting
from accounting.energy import Point, import_energy, integrate, job_energy, read_power
from accounting.energy_models import EnergyRecord
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.report import Dim, build, parse_month
from tests.unit.accounting.builders import month_jobs

SAMPLES = Path(__file__).parents[2] / "data" / "accounting" / "energy"
TOPO = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})
JOB1_J, JOB2_J, JOB3_J = 300_000, 9_000, 36_000


def test_trapezoids_and_gaps() -> None:
    pts = [Point(0, 100), Point(30, 200), Point(60, 200)]
    assert integrate(pts) == 30 * 150 + 30 * 200
    assert integrate([Point(100, 50)], before=Point(90, 30)) == 10 * 40
    assert integrate([Point(0, 100), Point(500, 100)], max_gap_s=100) == 0  # the agent was down
    assert integrate([Point(0, 100)]) == 0


def test_read_power_keeps_the_lines_with_watts_and_where_they_came_from() -> None:
    series = {(s.job_id, s.node): s for s in read_power(SAMPLES)}
    assert set(series) == {(1, "gpu1"), (2, "gpu1"), (3, "npu1")}
    assert len(series[1, "gpu1"].points) == 21
    assert len(series[2, "gpu1"].points) == 3  # the line without watts is no sample of power
    assert series[1, "gpu1"].source == "measured"
    assert series[3, "npu1"].source == "fake"
    assert read_power(SAMPLES / "missing") == []


def test_import_is_counted_once_and_survives_trimmed_samples(
    engine: Engine, tmp_path: Path
) -> None:
    with Session(engine) as s:
        done = import_energy(s, "aipool", read_power(SAMPLES))
        s.commit()
    assert (done.jobs, done.samples, done.joules) == (3, 30, JOB1_J + JOB2_J + JOB3_J)
    with Session(engine) as s:
        assert import_energy(s, "aipool", read_power(SAMPLES)).joules == 0  # nothing twice
        s.commit()
    # the agent trimmed its file and went on sampling job 1: only the new minute is added
    (tmp_path / "gpu1.jsonl").write_text(
        "".join(
            json.dumps({"ts": 1793615400 + 600 + 30 * i, "job": 1, "node": "gpu1", "watts": 400})
            + "\n"
            for i in range(3)
        )
    )
    with Session(engine) as s:
        more = import_energy(s, "aipool", read_power(tmp_path))
        s.commit()
        row = s.scalars(select(EnergyRecord).where(EnergyRecord.job_id == 1)).one()
    assert more.joules == 30 * 450 + 30 * 400
    assert row.energy_j == JOB1_J + more.joules
    assert row.samples == 21 + 2


def test_energy_per_job_and_in_reports_beside_card_hours(engine: Engine) -> None:
    ingest(engine, [u for j in month_jobs() if (u := meter(j, TOPO)) is not None])
    with Session(engine) as s:
        import_energy(s, "aipool", read_power(SAMPLES))
        s.commit()
    with engine.connect() as conn:
        per_job = job_energy(conn, "aipool", [1, 2, 3, 99])
        rep = build(conn, *parse_month("2026-11"), Dim.PROJECT)
        scoped = build(conn, *parse_month("2026-11"), Dim.PROJECT, scope=select(1).exists())
    assert per_job[1].kwh == Decimal("0.083333")
    assert per_job[1].source == "measured"
    assert per_job[3].source == "fake"
    assert 99 not in per_job
    lines = {ln.key: ln for ln in rep.lines}
    assert lines["nlp"].kwh == Decimal("0.085833")  # jobs 1 and 2: (300,000 + 9,000) J
    assert lines["nlp"].gpu_card_hours > 0
    assert lines["vision"].kwh == Decimal("0.010000")
    assert rep.total.kwh == lines["nlp"].kwh + lines["vision"].kwh + lines["cs101"].kwh
    # a tenant-scoped report without the scope on job rows shows no energy, not everyone's
    assert all(ln.kwh == 0 for ln in scoped.lines)


def test_the_energy_command_imports_once(engine: Engine) -> None:
    db = ["--db", str(engine.url), "--samples", str(SAMPLES), "--cluster", "aipool"]
    first = CliRunner().invoke(accounting, ["energy", *db])
    assert first.exit_code == 0, first.output
    assert first.output.strip() == "30 samples of 3 jobs: 0.095833 kWh added"
    again = CliRunner().invoke(accounting, ["energy", *db])
    assert again.output.strip() == "0 samples of 0 jobs: 0.000000 kWh added"
