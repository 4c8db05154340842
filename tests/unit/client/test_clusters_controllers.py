"""Cluster selection (-M) and controller lists of the CLI client, on recorded output."""

from __future__ import annotations

import pytest

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.parse import controllers_text
from slurm_plugins.client.runner import Completed, ReplayRunner

# `scontrol ping` of the lab with --controllers 3, primary stopped (22.05.8)
PING_FAILED_OVER = """Slurmctld(primary) at aipool-ctl1 is DOWN
Slurmctld(backup1) at aipool-ctl2 is UP
Slurmctld(backup2) at aipool-ctl3 is UP
*****************************************
** RESTORE SLURMCTLD DAEMON TO SERVICE **
*****************************************
"""
# `sacctmgr show associations` of a two-cluster lab, user rows only (22.05.8)
ASSOCS = "aipool|nlp|alice|||normal|normal|||1|\naipool2|nlp|alice|||normal|normal|||1|\n"


def ok(stdout: str = "", rc: int = 0) -> Completed:
    return Completed((), rc, stdout, "")


def test_ping_lists_every_controller_primary_first() -> None:
    ctlds = controllers_text(PING_FAILED_OVER)
    assert [(c.index, c.role, c.host, c.up) for c in ctlds] == [
        (0, "primary", "aipool-ctl1", False),
        (1, "backup1", "aipool-ctl2", True),
        (2, "backup2", "aipool-ctl3", True),
    ]
    assert ctlds[0].primary
    assert not ctlds[1].primary


def test_controllers_reads_ping_even_when_it_exits_non_zero() -> None:
    runner = ReplayRunner({("scontrol", "ping"): ok(PING_FAILED_OVER, rc=1)})
    ctlds = SlurmClient(runner).controllers()
    assert [c.up for c in ctlds] == [False, True, True]


def test_controllers_says_what_it_got_when_ping_lists_none() -> None:
    runner = ReplayRunner({("scontrol", "ping"): ok("something else\n")})
    with pytest.raises(SlurmError, match="listed no controller: 'something else"):
        SlurmClient(runner).controllers()


def test_takeover_names_the_backup_and_refuses_the_primary() -> None:
    runner = ReplayRunner({("scontrol", "takeover"): ok()})
    SlurmClient(runner).takeover(2)
    assert runner.calls == [(("scontrol", "takeover", "2"), None)]
    with pytest.raises(ValueError, match="1 or more"):
        SlurmClient(runner).takeover(0)


def test_on_adds_the_cluster_to_reads_and_submit() -> None:
    runner = ReplayRunner(
        {
            ("sinfo", "--version"): ok("slurm 24.11.5\n"),
            ("squeue",): ok('{"meta": {}, "errors": [], "jobs": []}'),
            ("sbatch",): ok("7;aipool2\n"),
        }
    )
    base = SlurmClient(runner, timeout=5)
    other = base.on("aipool2")
    assert other.cluster == "aipool2"
    assert other.timeout == 5
    assert base.cluster is None
    assert other.jobs() == []
    assert other.submit("#!/bin/sh\n", ["--partition=gpu"]) == 7
    assert runner.calls[1][0] == ("squeue", "-M", "aipool2", "--all", "--states=all", "--json")
    assert runner.calls[2][0] == ("sbatch", "--parsable", "-M", "aipool2", "--partition=gpu")


def test_ensure_tenants_compares_only_the_named_clusters_associations() -> None:
    from slurm_plugins.client.specs import UserSpec

    runner = ReplayRunner(
        {
            ("sinfo", "--version"): ok("slurm 22.05.8\n"),
            ("sacctmgr", "--noheader", "--parsable2", "show", "associations"): ok(ASSOCS),
            ("sacctmgr", "--noheader", "--parsable2", "show", "qos"): ok(""),
            ("sacctmgr", "-i"): ok(),
        }
    )
    spec = UserSpec("alice", "nlp", ("normal",), "normal")
    client = SlurmClient(runner)
    assert client.ensure_tenants(users=[spec], cluster="aipool2") == []
    sent = client.ensure_tenants(users=[spec], cluster="aipool3")
    assert len(sent) == 1
    assert sent[0].startswith("add user alice")
    assert runner.calls[-1][0] == ("sacctmgr", "-i")
