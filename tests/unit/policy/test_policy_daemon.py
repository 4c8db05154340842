"""The daemon against recorded Slurm 22.05 output: reads, plans, applies, then does nothing
when nothing changed; snapshots dump and replay; the CLI's --replay and errors; riding out
Slurm trouble."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner
from slurm_plugins.policy.cli import main
from slurm_plugins.policy.collect import build
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.daemon import Daemon
from slurm_plugins.policy.snapshot import Snapshot

V22 = Path(__file__).parents[2] / "data" / "slurm" / "22.05"
NOW = 1_795_000_000.0  # after the recorded jobs were submitted


def out(name: str) -> Completed:
    return Completed((), 0, (V22 / name).read_text(), "")


def recorded(
    writes: list[tuple[tuple[str, ...], str | None]], **more: Callable[..., Completed]
) -> ReplayRunner:
    def write(argv: Sequence[str], stdin: str | None) -> Completed:
        writes.append((tuple(argv), stdin))
        return Completed(tuple(argv), 0, "", "")

    return ReplayRunner(
        {
            **{(name,): answer for name, answer in more.items()},
            ("squeue",): out("squeue.json"),
            ("sinfo",): out("sinfo.json"),
            ("sinfo", "--version"): out("version.txt"),
            ("sacct",): out("sacct.json"),
            ("sacctmgr",): out("sacctmgr_assoc.txt"),
            ("scontrol",): write,
            ("scontrol", "show", "topology"): out("scontrol_show_topology.txt"),
            ("scancel",): write,
        }
    )


def config(tmp_path: Path, **extra: object) -> object:
    doc = {
        "state_dir": str(tmp_path / "state"),
        "tenants": {"nlp": {"cohort": "research", "nominal": {"gpu": 4}}},
        "policies": [{"name": "priority", "weight": 2}, {"name": "fair"}, {"name": "capacity"}],
        **extra,
    }
    return parse_config(doc)


def test_cycle_then_nothing_changed_means_no_writes(tmp_path: Path) -> None:
    writes: list[tuple[tuple[str, ...], str | None]] = []
    runner = recorded(writes)
    d = Daemon(config(tmp_path), SlurmClient(runner), clock=lambda: NOW)  # type: ignore[arg-type]
    first = d.cycle()
    assert first is not None
    assert [w[0][:2] for w in writes] == [("scontrol",)]
    assert "SiteFactor=" in (writes[0][1] or "")
    # Slurm now holds what we set; the same world again: reads only, no write
    writes.clear()
    reads_before = len(runner.calls)
    second = d.cycle()
    assert second is not None
    assert writes == []
    assert second.result is not None
    assert second.result.calls == 0
    kinds = {argv[0] for argv, _ in runner.calls[reads_before:]}
    assert kinds == {"squeue", "sinfo"}  # accounting and associations are cached


def test_restart_reads_its_state(tmp_path: Path) -> None:
    writes: list[tuple[tuple[str, ...], str | None]] = []
    d = Daemon(config(tmp_path), SlurmClient(recorded(writes)), clock=lambda: NOW)  # type: ignore[arg-type]
    d.cycle()
    writes.clear()
    again = Daemon(config(tmp_path), SlurmClient(recorded(writes)), clock=lambda: NOW)  # type: ignore[arg-type]
    again.cycle()
    assert writes == []


def test_dry_run_changes_nothing_not_even_state(tmp_path: Path) -> None:
    writes: list[tuple[tuple[str, ...], str | None]] = []
    d = Daemon(config(tmp_path), SlurmClient(recorded(writes), dry_run=True), clock=lambda: NOW)  # type: ignore[arg-type]
    report = d.cycle()
    assert report is not None
    assert report.plan.job_changes
    assert writes == []
    assert not (tmp_path / "state" / "state.json").exists()


def test_snapshot_dump_and_replay_are_equal(tmp_path: Path) -> None:
    writes: list[tuple[tuple[str, ...], str | None]] = []
    dump = tmp_path / "snap.json"
    d = Daemon(
        config(tmp_path),
        SlurmClient(recorded(writes), dry_run=True),
        clock=lambda: NOW,
        dump_snapshot=dump,
    )  # type: ignore[arg-type]
    report = d.cycle()
    assert report is not None
    again = Snapshot.load(dump)
    assert again == report.snapshot
    assert {j.job_id for j in again.jobs if j.pending} == {56, 57, 58, 59, 60}
    assert again.accounts["nlp"] == "research"


def test_snapshot_from_recorded_models() -> None:
    from slurm_plugins.client import parse

    jobs = parse.jobs((V22 / "squeue.json").read_text())
    nodes = parse.nodes((V22 / "sinfo.json").read_text())
    s = build(jobs, nodes, now=NOW)
    gpu1 = next(n for n in s.nodes if n.name == "gpu1")
    assert gpu1.card_used == (32, 32, 8, 0)  # two whole cards, 8 shards on card 2
    gpu2 = next(n for n in s.nodes if n.name == "gpu2")
    assert gpu2.card_used == (32, 0, 0, 0)  # two 16-shard jobs share card 0
    j51 = next(j for j in s.jobs if j.job_id == 51)
    assert j51.amounts.gpu == 0.5
    assert {j.job_id for j in s.jobs} >= {51, 56}
    assert all(j.state in {"PENDING", "RUNNING"} for j in s.jobs)


def test_replay_cli(tmp_path: Path) -> None:
    from tests.unit.policy.builders import gpu_node, job, snap

    s = snap([job(1, qos="high"), job(2, qos="low")], [gpu_node("gpu1")])
    f = tmp_path / "s.json"
    s.dump(f)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"state_dir": str(tmp_path), "policies": [{"name": "priority"}]}))
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "--replay", str(f)])
    assert res.exit_code == 0, res.output
    assert "update 1 SiteFactor=1000000" in res.output
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "--replay", str(f), "--json"])
    assert json.loads(res.output)["order"] == [1, 2]


def test_cli_reports_config_errors_with_status_2(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("policies: [{name: nope}]\n")
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "--once"])
    assert res.exit_code == 2
    assert "error: policies[0].name: unknown policy 'nope'" in res.output


def test_replay_refuses_other_json(tmp_path: Path) -> None:
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"version": 99}))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"policies": [{"name": "fifo"}]}))
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "--replay", str(f)])
    assert res.exit_code == 2
    assert "not a version 1 policy snapshot" in res.output


def test_why_reads_the_decision_log(tmp_path: Path) -> None:
    writes: list[tuple[tuple[str, ...], str | None]] = []
    d = Daemon(config(tmp_path), SlurmClient(recorded(writes)), clock=lambda: NOW)  # type: ignore[arg-type]
    d.cycle()
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        json.dumps({"state_dir": str(tmp_path / "state"), "policies": [{"name": "fifo"}]})
    )
    res = CliRunner().invoke(main, ["why", "--config", str(cfg), "57"])
    assert res.exit_code == 0
    assert "job 57: score" in res.output
    res = CliRunner().invoke(main, ["why", "--config", str(cfg), "12345"])
    assert res.exit_code == 1


@pytest.mark.parametrize("field", ["holds", "site_factors"])
def test_state_round_trips(tmp_path: Path, field: str) -> None:
    from slurm_plugins.policy.snapshot import DaemonState, Mark
    from slurm_plugins.policy.state import StateStore

    value = {7: Mark(1.5, "x")} if field == "holds" else {7: 42}
    st = replace(DaemonState(), **{field: value})
    store = StateStore(tmp_path)
    store.save(st)
    assert store.load() == st


# ------------------------------------------------------------------ the daemon and Slurm trouble
def down(argv: Sequence[str], stdin: str | None) -> Completed:
    return Completed(
        tuple(argv), 1, "", "squeue: error: Unable to contact slurm controller (connect failure)"
    )


def test_tick_survives_an_unreachable_controller(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = parse_config({"state_dir": str(tmp_path), "policies": [{"name": "fifo"}]})
    d = Daemon(cfg, SlurmClient(ReplayRunner({("squeue",): down, ("sinfo",): down})))
    assert d.tick() is None
    assert "cycle failed: Unable to contact slurm controller" in caplog.text


def test_run_forever_cycles_until_sigterm(tmp_path: Path) -> None:
    squeue = json.dumps({"meta": {}, "errors": [], "jobs": []})
    sinfo = json.dumps({"meta": {}, "errors": [], "nodes": []})
    runner = ReplayRunner(
        {
            ("squeue",): Completed((), 0, squeue, ""),
            ("sinfo",): Completed((), 0, sinfo, ""),
            ("sinfo", "--version"): Completed((), 0, "slurm-wlm 22.05.8\n", ""),
            ("sacct",): Completed((), 0, json.dumps({"meta": {}, "errors": [], "jobs": []}), ""),
            ("sacctmgr",): Completed((), 0, "", ""),
        }
    )
    beat = tmp_path / "alive"
    cfg = parse_config(
        {
            "interval": 0.2,
            "state_dir": str(tmp_path),
            "policies": [{"name": "fifo"}],
            "placement": {"heartbeat": str(beat), "watch": 0},
        }
    )
    d = Daemon(cfg, SlurmClient(runner))
    # long enough for two 0.2 s cycles on a loaded machine (one first cycle took 1 s in a full run)
    timer = threading.Timer(2.5, lambda: os.kill(os.getpid(), signal.SIGTERM))
    old = signal.getsignal(signal.SIGTERM)
    try:
        timer.start()
        t0 = time.monotonic()
        d.run_forever()
        assert time.monotonic() - t0 < 10
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, old)
    assert sum(1 for argv, _ in runner.calls if argv[0] == "squeue") >= 2
    # stopped on purpose: stale at once (the hook need not wait for a lapse), and when
    from slurm_plugins.admission.heartbeat import read_status

    assert beat.stat().st_mtime == 0
    status = read_status(beat, 10, time.time())
    assert not status.running
    assert status.since is not None
    assert abs(status.since - time.time()) < 30


# ------------------------------------------------------------------ the watch and the heartbeat
def sdiag(submitted: int) -> Completed:
    text = (V22 / "sdiag.txt").read_text()
    text = text.replace("Jobs submitted: 2088", f"Jobs submitted: {submitted}")
    return Completed((), 0, text, "")


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_the_watch_cycles_on_new_submissions_and_beats_while_cycles_work(tmp_path: Path) -> None:
    writes: list[tuple[tuple[str, ...], str | None]] = []
    submitted: list[int | None] = [2088]

    def counters(argv: Sequence[str], stdin: str | None) -> Completed:
        return down(argv, stdin) if submitted[0] is None else sdiag(submitted[0])

    runner = recorded(writes, sdiag=counters)
    beat = tmp_path / "admission" / "placement-daemon.alive"
    beat.parent.mkdir()
    cfg = config(tmp_path, interval=60, placement={"heartbeat": str(beat), "watch": "0.25s"})
    clock = Clock(NOW)
    d = Daemon(cfg, SlurmClient(runner), clock=clock)  # type: ignore[arg-type]

    def squeues() -> int:
        return sum(1 for argv, _ in runner.calls if argv[0] == "squeue")

    assert d.watch()  # the first look: everything is new
    assert beat.exists()
    first = squeues()
    clock.t += 1
    assert not d.watch()  # nothing submitted, the interval not due: no cycle
    assert squeues() == first
    submitted[0] = 2089
    clock.t += 1
    assert d.watch()  # a submission: a cycle at once
    assert squeues() == first + 1
    clock.t += 60
    assert d.watch()  # the interval
    os.utime(beat, (0, 0))
    submitted[0] = None
    assert not d.watch()
    assert beat.stat().st_mtime == 0  # no beat while slurmctld cannot be asked


def test_a_failing_cycle_stops_the_heartbeat(tmp_path: Path) -> None:
    beat = tmp_path / "alive"
    runner = ReplayRunner({("sdiag",): sdiag(1), ("squeue",): down, ("sinfo",): down})
    cfg = config(tmp_path, placement={"heartbeat": str(beat), "watch": 0.25})
    d = Daemon(cfg, SlurmClient(runner))  # type: ignore[arg-type]
    assert d.watch()
    assert not beat.exists()


def test_dry_run_does_not_beat(tmp_path: Path) -> None:
    beat = tmp_path / "alive"
    writes: list[tuple[tuple[str, ...], str | None]] = []
    runner = recorded(writes, sdiag=lambda argv, stdin: sdiag(1))
    cfg = config(tmp_path, placement={"heartbeat": str(beat)})
    d = Daemon(cfg, SlurmClient(runner, dry_run=True), clock=Clock(NOW))  # type: ignore[arg-type]
    assert d.watch()
    assert not beat.exists()
    assert writes == []
