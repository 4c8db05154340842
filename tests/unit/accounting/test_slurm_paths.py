"""Imports and alert checks through the Slurm client, answered from recorded 22.05 output."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, select

from accounting.alert_models import AlertDelivery, AlertState
from accounting.alerts import load_config
from accounting.cli import alert_cycle
from accounting.ingest import import_from_slurm
from accounting.models import IngestState, UsageRecord
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner

DATA = Path(__file__).parents[2] / "data" / "slurm" / "22.05"


def ok(name: str) -> Completed:
    return Completed((), 0, (DATA / name).read_text(), "")


def recorded() -> tuple[SlurmClient, ReplayRunner]:
    runner = ReplayRunner(
        {
            ("sinfo", "--version"): ok("version.txt"),
            ("sinfo",): ok("sinfo.json"),
            ("squeue",): ok("squeue.json"),
            ("sacct",): ok("sacct.json"),
            ("sacctmgr",): ok("sacctmgr_assoc.txt"),
        }
    )
    return SlurmClient(runner), runner  # type: ignore[arg-type]


def test_imports_read_sacct_from_the_last_import(engine: Engine) -> None:
    client, runner = recorded()
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    first = import_from_slurm(engine, client, now=now)
    assert first.written > 0
    second = import_from_slurm(engine, client, now=now + timedelta(minutes=15))
    assert second.written == 0
    starts = [argv[argv.index("--starttime") + 1] for argv, _ in runner.calls if argv[0] == "sacct"]
    local = now.astimezone().replace(tzinfo=None)
    assert starts == [
        (local - timedelta(days=2)).isoformat(timespec="seconds"),
        (local - timedelta(minutes=10)).isoformat(timespec="seconds"),
    ]
    with engine.connect() as conn:
        assert conn.execute(select(IngestState.imported_until)).scalar() == now + timedelta(
            minutes=15
        )
        domains = dict(conn.execute(select(UsageRecord.account, UsageRecord.domain)).all())
    assert domains.get("root") == "root"


def test_alert_dry_run_lists_what_holds_and_sends_nothing(engine: Engine) -> None:
    client, _ = recorded()
    now = datetime(2026, 11, 30, tzinfo=UTC)  # the recorded jobs ran on 2026-11-29
    import_from_slurm(engine, client, now=now)
    cfg = load_config(
        {
            "platform_admins": ["ops@example.org"],
            "tenants": {"root": {"card_hours": "0.001", "recipients": ["acct@example.org"]}},
        }
    )
    lines = alert_cycle(engine, client, cfg, dry_run=True, now=now)
    # the recorded nodes have whole GPUs and NPUs free: no pool alert
    ((line),) = lines
    assert line.startswith("budget:root root = ")
    assert line.endswith(" -> mail:root")
    with engine.connect() as conn:
        assert conn.execute(select(AlertState)).all() == []
        assert conn.execute(select(AlertDelivery)).all() == []
