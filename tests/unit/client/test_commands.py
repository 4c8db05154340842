"""The CLI client's argv discipline, dry-run, no-op skipping and error mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_plugins.client import (
    ControllerUnavailable,
    JobNotFound,
    JobUpdate,
    SlurmClient,
    SubmitRejected,
    UnsatisfiableRequest,
    parse,
)
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.runner import Completed, ReplayRunner
from slurm_plugins.client.specs import AccountSpec, QosSpec, UserSpec

DATA = Path(__file__).parents[2] / "data" / "slurm" / "24.11"


def ok(stdout: str = "") -> Completed:
    return Completed((), 0, stdout, "")


def fail(stderr: str, rc: int = 1) -> Completed:
    return Completed((), rc, "", stderr)


def client(
    answers: dict[tuple[str, ...], Completed], **kw: object
) -> tuple[SlurmClient, ReplayRunner]:
    runner = ReplayRunner(answers)
    return SlurmClient(runner, **kw), runner  # type: ignore[arg-type]


def test_submit_sends_script_on_stdin_and_parses_the_id() -> None:
    c, r = client({("sbatch",): ok("42\n")})
    job_id = c.submit("#!/bin/bash\necho '; rm -rf ~'\n", ["--gres=shard:8", "--job-name=$(id)"])
    assert job_id == 42
    argv, stdin = r.calls[0]
    assert argv == ("sbatch", "--parsable", "--gres=shard:8", "--job-name=$(id)")
    assert stdin == "#!/bin/bash\necho '; rm -rf ~'\n"


def test_submit_as_user_goes_through_runuser() -> None:
    c, r = client({("runuser",): ok("7;aipool\n")})
    assert c.submit("#!/bin/bash\n", [], as_user="alice") == 7
    assert r.calls[0][0][:4] == ("runuser", "-u", "alice", "--")


def test_multi_cluster_adds_m() -> None:
    c, r = client({("sbatch",): ok("3;labb\n")}, cluster="labb")
    assert c.submit("#!/bin/bash\n") == 3
    assert r.calls[0][0] == ("sbatch", "--parsable", "-M", "labb")


def test_unsatisfiable_gres_is_a_typed_error_with_slurms_message() -> None:
    msg = (DATA / "sbatch_bad_gres.txt").read_text().splitlines()[0]
    c, _ = client({("sbatch",): fail(msg)})
    with pytest.raises(UnsatisfiableRequest) as info:
        c.submit("#!/bin/bash\n", ["--gres=gpu:h100:1"])
    assert "Requested node configuration is not available" in info.value.message
    assert info.value.returncode == 1
    assert info.value.argv[0] == "sbatch"


def test_policy_rejection_is_submit_rejected() -> None:
    c, _ = client(
        {
            ("sbatch",): fail(
                "sbatch: error: policy: shard size must be k/32\n"
                "sbatch: error: Batch job submission failed: Unspecified error"
            )
        }
    )
    with pytest.raises(SubmitRejected, match="shard size must be k/32") as info:
        c.submit("#!/bin/bash\n")
    assert not isinstance(info.value, UnsatisfiableRequest)


V2411 = {("sinfo", "--version"): ok("slurm-wlm 24.11.5\n")}
V2205 = {("sinfo", "--version"): ok("slurm-wlm 22.05.8\n")}


def test_controller_down() -> None:
    down = fail("slurm_load_jobs error: Unable to contact slurm controller")
    c, _ = client({**V2411, ("squeue",): down})
    with pytest.raises(ControllerUnavailable):
        c.jobs()


def test_unknown_job() -> None:
    c, _ = client({**V2411, ("squeue",): fail("slurm_load_jobs error: Invalid job id specified")})
    with pytest.raises(JobNotFound):
        c.job(999)


@pytest.mark.parametrize(
    ("version", "every"), [(V2205, ()), (V2411, ("--states=all",))], ids=["22.05", "24.11"]
)
def test_ended_jobs_still_in_memory_are_asked_for_on_each_release(
    version: dict[tuple[str, ...], Completed], every: tuple[str, ...]
) -> None:
    """24.11's squeue --json hides ended jobs unless asked for every state; 22.05 lists them."""
    c, r = client({**version, ("squeue",): ok((DATA / "squeue.json").read_text())})
    c.jobs(active_only=False)
    assert r.calls[-1][0] == ("squeue", "--all", *every, "--json")
    c.job(6)
    assert r.calls[-1][0] == ("squeue", *every, "--json", "--jobs", "6")


def test_dry_run_runs_no_writes() -> None:
    c, r = client({}, dry_run=True)
    assert c.submit("#!/bin/bash\n") == 0
    c.cancel([1, 2])
    c.hold([3])
    c.update_jobs([JobUpdate(5, priority=10)])
    assert r.calls == []


def test_batched_updates_skip_no_ops() -> None:
    squeue = ok((DATA / "squeue.json").read_text())
    c, r = client({**V2411, ("squeue",): squeue, ("scontrol",): ok()})
    current = {j.job_id: j for j in c.jobs()}
    sent = c.update_jobs(
        [
            JobUpdate(13, priority=current[13].priority),  # unchanged: not sent
            JobUpdate(14, priority=5, exc_nodes="node1"),
            JobUpdate(15, site_factor=100),
        ],
        current=current,
    )
    assert sent == 2
    argv, stdin = r.calls[-1]
    assert argv == ("scontrol",)
    assert stdin == (
        "update JobId=14 Priority=5 ExcNodeList=node1\nupdate JobId=15 SiteFactor=100\n"
    )


def test_nothing_to_update_sends_nothing() -> None:
    c, r = client({})
    assert c.update_jobs([JobUpdate(1)]) == 0
    assert r.calls == []


def test_update_node_skips_no_op() -> None:
    node = parse.nodes((DATA / "scontrol_nodes.json").read_text())[0]
    c, r = client({("scontrol",): ok()})
    assert not c.update_node(node, weight=node.weight, state="MIXED")
    assert c.update_node(node, weight=50, state="DRAIN", reason="gpu xid 79")
    assert r.calls[0][0] == (
        "scontrol",
        "update",
        f"NodeName={node.name}",
        "Weight=50",
        "State=DRAIN",
        'Reason="gpu xid 79"',
    )


def test_values_with_quotes_or_newlines_are_refused() -> None:
    c, _ = client({("scontrol",): ok()})
    with pytest.raises(SlurmError, match="refusing value"):
        c.update_node("node1", state="DRAIN", reason="x\nupdate NodeName=all State=DOWN")


def test_sacctmgr_changes_are_one_batch_and_skip_what_exists() -> None:
    answers = {
        ("sinfo", "--version"): ok("slurm-wlm 24.11.5\n"),
        ("sacctmgr", "show", "qos", "--json"): ok((DATA / "sacctmgr_qos.json").read_text()),
        ("sacctmgr", "show", "associations", "--json"): ok(
            (DATA / "sacctmgr_assoc.json").read_text()
        ),
        ("sacctmgr", "-i"): ok(),
    }
    c, r = client(answers)
    c.ensure_qos([QosSpec("high", 1000, ("low",)), QosSpec("urgent", 2000, ("high", "low"))])
    writes = [stdin for argv, stdin in r.calls if argv == ("sacctmgr", "-i")]
    assert writes == [
        "add qos urgent\nmodify qos where name=urgent set Priority=2000 Preempt=high,low\n"
    ]
    r.calls.clear()
    c.ensure_accounts(
        [
            AccountSpec("nlp", "root"),
            AccountSpec("cv", "root", "Vision group"),
            AccountSpec("cv-3d", "cv"),
        ]
    )
    c.ensure_users([UserSpec("root", "nlp", ("normal", "low"), "normal"), UserSpec("alice", "cv")])
    writes = [stdin for argv, stdin in r.calls if argv == ("sacctmgr", "-i")]
    assert writes == [
        'add account cv Parent=root Description="Vision group" Organization=cv\n'
        "add account cv-3d Parent=cv Description=cv-3d Organization=cv\n",
        "add user alice Account=cv QOS=normal DefaultQOS=normal\n",
    ]


def test_card_minute_limits_and_removals() -> None:
    assoc = (Path(__file__).parents[2] / "data/slurm/22.05/sacctmgr_assoc.txt").read_text()
    answers = {
        ("sinfo", "--version"): ok("slurm-wlm 22.05.8\n"),
        ("sacctmgr", "--noheader", "--parsable2", "show", "associations"): ok(assoc),
        ("sacctmgr", "-i"): ok(),
    }
    c, r = client(answers)
    limits = {"gres/gpu": 2}
    # physics already has GrpTRES gres/gpu=2 and GrpTRESMins gres/gpu=6000: nothing to send
    assert (
        c.ensure_accounts(
            [AccountSpec("physics", "root", grp_tres=limits, grp_tres_mins={"gres/gpu": 6000})]
        )
        == []
    )
    sent = c.ensure_accounts(
        [AccountSpec("physics", "root", grp_tres=limits, grp_tres_mins={"gres/gpu": 9000})]
    )
    assert sent == [
        "modify account where name=physics set Description=physics "
        "Organization=physics GrpTRES=gres/gpu=2 GrpTRESMins=gres/gpu=9000"
    ]
    removed = c.remove_associations(
        users=[("carol", "cs101"), ("ghost", "cs101")], accounts=["teaching", "cs101", "nope"]
    )
    assert removed == [
        "delete user where name=carol account=cs101",
        "delete account where name=cs101",
        "delete account where name=teaching",
    ]
    assert r.calls[-1][1] == "\n".join(removed) + "\n"


def test_qos_moves_and_batch_signals() -> None:
    c, r = client(
        {
            **V2411,
            ("squeue",): ok((DATA / "squeue.json").read_text()),
            ("scontrol",): ok(),
            ("scancel",): ok(),
        }
    )
    current = {j.job_id: j for j in c.jobs()}
    assert (
        c.update_jobs([JobUpdate(13, qos="low"), JobUpdate(14, qos="normal")], current=current) == 1
    )  # job 14 is already in QOS normal
    assert r.calls[-1][1] == "update JobId=13 QOS=low\n"
    c.cancel([6], signal="USR1", batch=True)
    assert r.calls[-1][0] == ("scancel", "--signal", "USR1", "--batch", "6")
    assert current[13].requeue
    assert current[13].eligible_time is not None


@pytest.mark.parametrize(
    ("prefix", "sample", "call"),
    [
        (("squeue",), "squeue_controller_down.json", "jobs"),
        (("sinfo", "--json"), "sinfo_controller_down.json", "nodes"),
    ],
)
def test_errors_inside_json_mean_unavailable_not_empty(
    prefix: tuple[str, ...], sample: str, call: str
) -> None:
    """22.05 exits 0 with [] and an error when slurmctld is down: never read that as empty."""
    text = (Path(__file__).parents[2] / "data/slurm/22.05" / sample).read_text()
    c, _ = client({("sinfo", "--version"): ok("slurm-wlm 22.05.8\n"), prefix: ok(text)})
    with pytest.raises(ControllerUnavailable, match="Slurm reported errors"):
        getattr(c, call)()


def test_sacct_nothing_found_is_an_empty_answer() -> None:
    text = (Path(__file__).parents[2] / "data/slurm/22.05/sacct_nothing_found.json").read_text()
    c, _ = client({("sacct",): ok(text)})
    assert c.accounting(job_ids=[99999]) == []


def test_ensure_tenants_reads_once_and_writes_once() -> None:
    answers = {
        ("sinfo", "--version"): ok("slurm-wlm 24.11.5\n"),
        ("sacctmgr", "show", "qos", "--json"): ok((DATA / "sacctmgr_qos.json").read_text()),
        ("sacctmgr", "show", "associations", "--json"): ok(
            (DATA / "sacctmgr_assoc.json").read_text()
        ),
        ("sacctmgr", "-i"): ok(),
    }
    c, r = client(answers)
    sent = c.ensure_tenants(
        [QosSpec("urgent", 2000)], [AccountSpec("cv", "root")], [UserSpec("alice", "cv")]
    )
    assert [line.split()[:2] for line in sent] == [
        ["add", "qos"],
        ["modify", "qos"],
        ["add", "account"],
        ["add", "user"],
    ]
    kinds = [argv[:3] for argv, _ in r.calls if argv[0] == "sacctmgr"]
    assert kinds.count(("sacctmgr", "-i")) == 1
    assert kinds.count(("sacctmgr", "show", "associations")) == 1


def test_every_write_logs_its_argv_quoted_and_dry_run_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    c, r = client({("sbatch",): ok("5\n"), ("scancel",): ok(), ("scontrol",): ok()})
    with caplog.at_level("INFO", logger="aipool.slurm"):
        c.submit("#!/bin/bash\ntrue\n", ["--job-name=a b; $(id)"])
        c.cancel([5])
        c.hold([5, 6])
        c.update_jobs([JobUpdate(5, priority=10)])
    assert [rec.getMessage() for rec in caplog.records] == [
        "run: sbatch --parsable '--job-name=a b; $(id)' <<< 2 lines",
        "run: scancel 5",
        "run: scontrol hold 5,6",
        "run: scontrol <<< 1 lines",
    ]
    caplog.clear()
    dry, dry_runner = client({}, dry_run=True)
    with caplog.at_level("INFO", logger="aipool.slurm"):
        dry.cancel([7])
    assert [rec.getMessage() for rec in caplog.records] == ["dry-run: scancel 7"]
    assert dry_runner.calls == []
    assert len(r.calls) == 4


def test_start_now_clears_a_begin_time_after_the_pin() -> None:
    c, r = client({("scontrol",): ok()})
    assert c.update_jobs([JobUpdate(21, req_nodes="gpu2", start_now=True)]) == 1
    assert r.calls[-1][1] == "update JobId=21 ReqNodeList=gpu2 StartTime=now\n"


def test_counters_read_sdiag() -> None:
    text = (DATA.parent / "22.05" / "sdiag.txt").read_text()
    c, r = client({("sdiag",): ok(text)}, cluster="labb")
    got = c.counters()
    assert (got.submitted, got.started, got.completed, got.canceled, got.failed) == (
        2088,
        80,
        39,
        2047,
        0,
    )
    assert r.calls[0][0] == ("sdiag", "-M", "labb")
    with pytest.raises(parse.ParseError):
        parse.sdiag_counters("sdiag: error: Unable to contact slurm controller\n")
