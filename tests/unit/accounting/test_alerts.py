"""Alerts through a real SMTP server (aiosmtpd, started here): once per episode, to the right
people, with the right content; the idle reaper's stops mail the job's owner; the monthly
report goes out as a PDF."""

from __future__ import annotations

import email
import socket
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiosmtpd.controller import Controller
from sqlalchemy import Engine, select

from accounting.alerts import (
    AlertConfigError,
    Budget,
    load_config,
    monthly_report_mail,
    pool_conditions,
    process,
    quota_conditions,
)
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.models import AlertEpisode
from slurm_plugins.client.models import Gres, Node, NodeState, Tres
from slurm_plugins.common.errors import ConfigError
from slurm_plugins.common.mail import Mail, Mailer, MailError, SmtpSettings, compose
from slurm_plugins.common.notify import EmailSink, MultiSink, Notification
from slurm_plugins.policy.config import DaemonConfig, parse_config
from slurm_plugins.policy.daemon import notifier_for
from tests.unit.accounting.builders import acct

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)


class Inbox:
    def __init__(self) -> None:
        self.mails: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content)))
        return "250 OK"

    def take(self) -> list[tuple[list[str], Message]]:
        out, self.mails = self.mails, []
        return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, Mailer]]:
    inbox = Inbox()
    port = _free_port()
    ctl = Controller(inbox, hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        yield inbox, Mailer(SmtpSettings("127.0.0.1", port, "aipool@example.org"))
    finally:
        ctl.stop()


CONFIG = {
    "smtp": {"host": "127.0.0.1", "port": 2525, "sender": "aipool@example.org"},
    "platform_admins": ["ops@example.org"],
    "user_email": "{user}@example.org",
    "emails": {"carol": "carol.c@example.org"},
    "tenants": {
        "research": {"card_hours": 5, "warn_at": 0.8, "recipients": ["erin@example.org"]},
        "cs101": {"card_hours": 100, "recipients": ["tina@example.org"]},
    },
    "users": {"card_hours": {"alice": 3}},
}


@pytest.fixture
def used(engine: Engine) -> Engine:
    jobs = [
        acct(1, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=2, user="alice", account="nlp"),
        acct(2, "cpu=1,gres/shard=8", hours=2, user="bob", account="vision"),
        acct(3, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, user="carol", account="cs101"),
    ]
    ingest(engine, [u for j in jobs if (u := meter(j, TOPO)) is not None])
    return engine


def test_quota_alerts_go_out_once_per_episode(used: Engine, smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config(CONFIG)

    def cycle(c: Any = cfg) -> None:
        with used.connect() as conn:
            holding = quota_conditions(conn, c, NOW)
        process(used, mailer, holding, NOW)

    cycle()
    mails = {m["Subject"]: (to, m) for to, m in inbox.take()}
    assert set(mails) == {
        "AIPool: research has used 90.0 % of its 5 card-hours in 2026-11",
        "AIPool: you have used 4.0000 of your 3 card-hours in 2026-11",
    }
    to, msg = mails["AIPool: research has used 90.0 % of its 5 card-hours in 2026-11"]
    assert to == ["erin@example.org"]
    assert msg["From"] == "aipool@example.org"
    assert "the domain research has used 4.5000 of its 5 card-hours" in msg.get_payload()
    to, _ = mails["AIPool: you have used 4.0000 of your 3 card-hours in 2026-11"]
    assert to == ["alice@example.org"]

    cycle()
    cycle()
    assert inbox.take() == []  # still holding: same episode, no mail

    relaxed = replace(
        cfg,
        tenants={"research": Budget(Decimal(50), Decimal("0.8"), ("erin@example.org",))},
    )
    cycle(relaxed)  # research under its threshold: the episode closes
    assert inbox.take() == []
    cycle()  # over again: a new episode, a new mail
    assert [m["Subject"] for _, m in inbox.take()] == [
        "AIPool: research has used 90.0 % of its 5 card-hours in 2026-11"
    ]
    with used.connect() as conn:
        episodes = conn.execute(
            select(AlertEpisode.subject, AlertEpisode.closed_at)
            .where(AlertEpisode.kind == "tenant_budget")
            .order_by(AlertEpisode.id)
        ).all()
    assert [(s, c is None) for s, c in episodes] == [
        ("research@2026-11", False),
        ("research@2026-11", True),
    ]


def _gpu_node(name: str, gpus_used: int, shards_used: int, partition: str = "gpu") -> Node:
    return Node(
        name,
        NodeState.MIXED,
        gres=Gres.parse_list("gpu:a100:4,shard:a100:128"),
        partitions=(partition,),
        tres_used=Tres({"gres/gpu": gpus_used, "gres/shard": shards_used}),
    )


def test_an_exhausted_pool_alerts_the_platform_admins(
    engine: Engine, smtp: tuple[Inbox, Mailer]
) -> None:
    inbox, mailer = smtp
    cfg = load_config(CONFIG)
    # 3 whole GPUs and one shard on the fourth card: nothing whole is left
    full = [_gpu_node("gpu1", 3, 1), _gpu_node("gpu2", 4, 0)]
    assert pool_conditions([_gpu_node("gpu1", 3, 0)], cfg) == []
    process(engine, mailer, pool_conditions(full, cfg, {"gpu": 7}), NOW)
    process(engine, mailer, pool_conditions(full, cfg, {"gpu": 9}), NOW)
    (to, msg), *rest = inbox.take()
    assert rest == []
    assert to == ["ops@example.org"]
    assert msg["Subject"] == "AIPool: no free GPU cards left in pool gpu"
    assert "(8 of 8)" in msg.get_payload()
    assert "7 jobs wait" in msg.get_payload()


def test_a_job_stopped_for_idleness_mails_its_owner_once(smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config(CONFIG)
    sink = MultiSink([EmailSink(mailer, lambda u: None if u == "root" else cfg.address(u))])
    note = Notification(
        kind="idle_cancel",
        job_id=4242,
        users=("carol", "root"),
        subject="job 4242 stopped: its GPUs were idle for 60 min",
        text="Job 4242 used under 5 % of its GPUs for 60 minutes and was cancelled.",
    )
    sink.send(note)
    sink.send(note)
    (to, msg), *rest = inbox.take()
    assert rest == []
    assert to == ["carol.c@example.org"]
    assert msg["Subject"] == "AIPool: job 4242 stopped: its GPUs were idle for 60 min"
    assert "was cancelled" in msg.get_payload()


def test_monthly_report_is_mailed_as_pdf(used: Engine, smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config({**CONFIG, "monthly_report": {"recipients": ["board@example.org"]}})
    with used.connect() as conn:
        mail = monthly_report_mail(conn, cfg, NOW)
    assert mail is not None
    mailer.send([mail])
    (to, msg), *_ = inbox.take()
    assert to == ["board@example.org"]
    assert msg["Subject"] == "AIPool usage report for 2026-11"
    parts = [p for p in msg.walk() if p.get_content_type() == "application/pdf"]
    assert len(parts) == 1
    assert parts[0].get_filename() == "aipool-usage-2026-11.pdf"
    assert parts[0].get_payload(decode=True).startswith(b"%PDF")


def test_a_failed_send_opens_no_episode(used: Engine) -> None:
    mailer = Mailer(SmtpSettings("127.0.0.1", _free_port(), "aipool@example.org", timeout_s=2))
    cfg = load_config(CONFIG)
    with used.connect() as conn:
        holding = quota_conditions(conn, cfg, NOW)
    with pytest.raises(MailError, match="failed"):
        process(used, mailer, holding, NOW)
    with used.connect() as conn:
        assert conn.execute(select(AlertEpisode)).all() == []


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"tenants": {"x": {"card_hours": -1}}}, "card_hours"),
        ({"user_email": "nobody"}, "{user}"),
        ({"platform_admins": ["not-an-address"]}, "platform_admins"),
        ({"smtp": {"security": "ssl"}}, "security"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_configs_say_what_is_wrong(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(AlertConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_config({**CONFIG, **patch})


def test_header_injection_is_refused() -> None:
    with pytest.raises(MailError):
        compose("aipool@example.org", Mail(("a@example.org\nBcc: x@evil.example",), "s", "b"))


def _daemon_config(tmp_path: Path, alerts: Path) -> DaemonConfig:
    return parse_config(
        {
            "policies": [{"name": "fifo"}],
            "state_dir": str(tmp_path),
            "notify": {"email": str(alerts)},
        }
    )


def test_the_policy_daemon_mails_its_notices_through_the_alert_configuration(
    smtp: tuple[Inbox, Mailer], tmp_path: Path
) -> None:
    inbox, mailer = smtp
    alerts = tmp_path / "alerts.yaml"
    smtp_cfg = {**CONFIG["smtp"], "port": mailer.settings.port}
    alerts.write_text(yaml.safe_dump({**CONFIG, "smtp": smtp_cfg}))
    cfg = _daemon_config(tmp_path, alerts)
    notifier = notifier_for(cfg)
    idle = Notification("idle_cancel", 77, ("bob", "root"), "job 77 stopped", "idle for 60 min")
    notifier.send(idle)
    notifier.send(idle)  # the reaper may report the same stop again: one mail
    for node in ("gpu1", "gpu2"):  # node alerts (job 0) are distinct episodes: one mail each
        notifier.send(Notification("node_drained", 0, ("root", "erin"), f"{node} drained", "xid"))
    mails = inbox.take()
    assert [(to, m["Subject"]) for to, m in mails] == [
        (["bob@example.org"], "AIPool: job 77 stopped"),
        (["erin@example.org"], "AIPool: gpu1 drained"),
        (["erin@example.org"], "AIPool: gpu2 drained"),
    ]


def test_a_bad_alert_configuration_stops_the_daemon_with_its_path(tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text("smtp: {port: 0}\n")
    cfg = _daemon_config(tmp_path, alerts)
    with pytest.raises(ConfigError, match=r"alerts\.yaml"):
        notifier_for(cfg)
