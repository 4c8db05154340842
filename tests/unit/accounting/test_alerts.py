"""Alerts through a real SMTP server (aiosmtpd, started here): the alert keys that came before
rules, read as rules, fire once per episode to the right people with the right content and
recover once; the idle reaper's stops mail the job's owner; the monthly report goes out as a
PDF."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import Engine, select

from accounting.alert_delivery import Deliverer
from accounting.alert_eval import Facts, observe, pool_facts, run_rules, usage_facts
from accounting.alert_models import AlertDelivery, AlertState
from accounting.alerts import AlertConfig, AlertConfigError, load_config, monthly_report_mails
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.report import month_start
from plumbing.errors import ConfigError
from plumbing.mail import Mail, Mailer, MailError, SmtpSettings, compose
from plumbing.notify import EmailSink, MultiSink, Notification
from slurm_plugins.client.models import Gres, Node, NodeState, Tres
from slurm_plugins.policy.config import DaemonConfig, parse_config
from slurm_plugins.policy.daemon import notifier_for
from tests.unit.accounting.builders import acct
from tests.unit.accounting.conftest import Inbox, free_port

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)


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


def cycle(  # noqa: PLR0917 (a test's shorthand)
    engine: Engine,
    cfg: AlertConfig,
    mailer: Mailer,
    nodes: Iterable[Node] = (),
    pending: Mapping[str, int] | None = None,
    now: datetime = NOW,
) -> list[str]:
    """One evaluation of the configuration's rules, without waits between retries."""
    with engine.connect() as conn:
        facts = Facts(month_start(now), usage_facts(conn, now), pool_facts(nodes, pending))
    deliver = Deliverer(
        engine,
        cfg.channels,
        mailer,
        cfg.mail,
        platform_admins=cfg.platform_admins,
        sleep=lambda _s: None,
    )
    return run_rules(engine, cfg.rules, facts, deliver, now, site=cfg.mail.site_name)


def test_quota_alerts_go_out_once_per_episode(used: Engine, smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config(CONFIG)
    assert [r.name for r in cfg.rules] == [
        "budget:cs101",
        "budget:research",
        "user_quota",
        "pool_exhausted:GPU",
        "pool_exhausted:NPU",
    ]

    cycle(used, cfg, mailer)
    mails = {m["Subject"]: (to, m) for to, m in inbox.take()}
    assert set(mails) == {
        "AIPool: research has used 90.0% of its 5.00 card-hours in Nov 2026",
        "AIPool: you have used 4.00 of your 3.00 card-hours in Nov 2026",
    }
    to, msg = mails["AIPool: research has used 90.0% of its 5.00 card-hours in Nov 2026"]
    assert to == ["erin@example.org"]
    assert msg["From"] == "aipool@example.org"
    assert "The domain research has used 4.50 of its 5.00 card-hours" in _text(msg)
    assert "the warning threshold is 80%" in _text(msg)
    to, _ = mails["AIPool: you have used 4.00 of your 3.00 card-hours in Nov 2026"]
    assert to == ["alice@example.org"]

    cycle(used, cfg, mailer)
    cycle(used, cfg, mailer)
    assert inbox.take() == []  # still holding: same episode, no mail

    relaxed = load_config(
        {
            **CONFIG,
            "tenants": {
                **CONFIG["tenants"],
                "research": {"card_hours": 50, "warn_at": 0.8, "recipients": ["erin@example.org"]},
            },
        }
    )
    cycle(used, relaxed, mailer)  # research under its threshold: one recovery message
    ((to, msg),) = inbox.take()
    assert to == ["erin@example.org"]
    assert msg["Subject"] == "AIPool: budget:research has recovered"
    assert "no longer holds for research" in _text(msg)
    cycle(used, relaxed, mailer)
    assert inbox.take() == []
    cycle(used, cfg, mailer)  # over again: a new episode, a new mail
    assert [m["Subject"] for _, m in inbox.take()] == [
        "AIPool: research has used 90.0% of its 5.00 card-hours in Nov 2026"
    ]
    with used.connect() as conn:
        sent = conn.execute(
            select(AlertDelivery.subject, AlertDelivery.kind, AlertDelivery.ok)
            .where(AlertDelivery.rule == "budget:research")
            .order_by(AlertDelivery.id)
        ).all()
        states = conn.execute(select(AlertState.rule, AlertState.state)).all()
    assert [tuple(r) for r in sent] == [
        ("research", "fire", True),
        ("research", "recover", True),
        ("research", "fire", True),
    ]
    assert sorted(tuple(r) for r in states) == [
        ("budget:research", "firing"),
        ("user_quota", "firing"),
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
    (rule,) = [r for r in cfg.rules if r.name == "pool_exhausted:GPU"]
    one_free = observe(rule, Facts(NOW, pools=pool_facts([_gpu_node("gpu1", 3, 0)])))
    assert [(o.subject, o.value, rule.holds(o.value)) for o in one_free] == [("gpu/GPU", 1, False)]
    cycle(engine, cfg, mailer, full, {"gpu": 7})
    cycle(engine, cfg, mailer, full, {"gpu": 9})
    (to, msg), *rest = inbox.take()
    assert rest == []
    assert to == ["ops@example.org"]
    assert msg["Subject"] == "AIPool: no free GPU cards left in pool gpu"
    assert "(8 of 8)" in _text(msg)
    assert "7 jobs wait in the queue." in _text(msg)


def test_a_job_stopped_for_idleness_mails_its_owner_once(smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config(CONFIG)
    sink = MultiSink([EmailSink(mailer, lambda u: None if u == "root" else cfg.address(u))])
    # a notice without a translation (another daemon's) goes out in its English
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
    assert "was cancelled" in _text(msg)


def test_monthly_report_is_mailed_as_pdf(used: Engine, smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config({**CONFIG, "monthly_report": {"recipients": ["board@example.org"]}})
    with used.connect() as conn:
        mails = monthly_report_mails(conn, cfg, NOW)
    mailer.send(mails)
    (to, msg), *rest = inbox.take()
    assert rest == []
    assert to == ["board@example.org"]
    assert msg["Subject"] == "AIPool usage report for Nov 2026"
    assert "5.50 GPU card-hours and 0.00 NPU card-hours in 3 jobs" in _text(msg)
    parts = [p for p in msg.walk() if p.get_content_type() == "application/pdf"]
    assert len(parts) == 1
    assert parts[0].get_filename() == "aipool-usage-2026-11-en.pdf"
    assert parts[0].get_payload(decode=True).startswith(b"%PDF")


def _text(msg: Message) -> str:
    """The plain-text part of a mail, decoded (Chinese comes base64- or QP-encoded)."""
    part = next(p for p in msg.walk() if p.get_content_type() == "text/plain")
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode(part.get_content_charset() or "utf-8")


def test_a_failed_send_opens_no_episode(used: Engine) -> None:
    """No SMTP server: each mail is tried three times, each try recorded, and the episode
    stays pending, to fire when a send succeeds."""
    mailer = Mailer(SmtpSettings("127.0.0.1", free_port(), "aipool@example.org", timeout_s=2))
    cfg = load_config({**CONFIG, "users": {}})
    assert cycle(used, cfg, mailer) == ["not delivered budget:research research"]
    with used.connect() as conn:
        tries = conn.execute(
            select(AlertDelivery.channel, AlertDelivery.attempt, AlertDelivery.ok)
        ).all()
        error = conn.scalar(select(AlertDelivery.error))
        states = conn.execute(select(AlertState.subject, AlertState.state)).all()
    assert [tuple(t) for t in tries] == [("mail:research", n, False) for n in (1, 2, 3)]
    assert "failed" in str(error)
    assert [tuple(s) for s in states] == [("research", "pending")]


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


# ---------------------------------------------------------------------- languages
def test_each_reader_gets_the_alert_in_their_language(
    used: Engine, smtp: tuple[Inbox, Mailer]
) -> None:
    """A Chinese site (``locale``): erin and tina's addresses read Chinese, alice chose English
    (``languages``); a language saved in the portal wins over the file."""
    inbox, mailer = smtp
    two = {
        "research": {
            "card_hours": 5,
            "warn_at": 0.8,
            "recipients": ["erin@example.org", "ops@example.org"],
        }
    }
    cfg = load_config(
        {**CONFIG, "tenants": two, "locale": "zh_CN", "languages": {"alice": "en"}}
    ).with_saved_languages({"ops@example.org": "en"})
    cycle(used, cfg, mailer)
    mails = {tuple(to): m for to, m in inbox.take()}
    assert set(mails) == {("erin@example.org",), ("ops@example.org",), ("alice@example.org",)}
    zh = mails[("erin@example.org",)]
    assert zh["Subject"] == "AIPool：research 已用 5.00 卡时预算的 90.0%（2026年11月）"
    body = _text(zh)
    assert "域 research 在 2026年11月 已使用 4.50 卡时，预算为 5.00 卡时" in body
    assert "告警阈值为 80%" in body
    assert "Hello" not in body
    assert mails[("ops@example.org",)]["Subject"].startswith("AIPool: research has used 90.0%")
    assert mails[("alice@example.org",)]["Subject"] == (
        "AIPool: you have used 4.00 of your 3.00 card-hours in Nov 2026"
    )


def test_a_chinese_pool_alert(engine: Engine, smtp: tuple[Inbox, Mailer]) -> None:
    inbox, mailer = smtp
    cfg = load_config({**CONFIG, "locale": "zh_CN"})
    full = [_gpu_node("gpu1", 4, 0)]
    cycle(engine, cfg, mailer, full, {"gpu": 1})
    ((to, msg),) = inbox.take()
    assert to == ["ops@example.org"]
    assert msg["Subject"] == "AIPool：资源池 gpu 已无空闲 GPU 卡"
    assert "资源池 gpu 的 GPU 卡已全部分配（4 / 4）" in _text(msg)
    assert "队列中有 1 个作业在等待。" in _text(msg)


def test_the_idle_reapers_notice_is_mailed_in_the_owners_language(
    smtp: tuple[Inbox, Mailer],
) -> None:
    """The reaper's own notice (title and body in words) reaches carol in Chinese and bob in
    English, each once; the English of logs and files stays as it was."""
    from slurm_plugins.policy.engine import _TITLES
    from slurm_plugins.policy.plan import Action
    from slurm_plugins.policy.policies.idle import _STOP
    from translations import Message

    inbox, mailer = smtp
    cfg = load_config({**CONFIG, "languages": {"carol": "zh_CN"}})
    sink = EmailSink(mailer, cfg.address, language=cfg.mail.user_language, site_name="北大算力")
    values = {"threshold": "10", "period": "30", "peak": "2", "grace": "10"}
    note = Notification(
        "idle",
        4242,
        ("carol", "bob"),
        "job 4242 (train) cancelled",
        "idle: accelerator use under 10% for 30 min (peak 2%) …",
        title=Message.of(_TITLES[Action.CANCEL], job=4242, name="train"),
        body=Message.of(_STOP[Action.CANCEL], **values),
    )
    sink.send(note)
    sink.send(note)
    mails = {tuple(to): m for to, m in inbox.take()}
    assert set(mails) == {("carol.c@example.org",), ("bob@example.org",)}
    zh = mails[("carol.c@example.org",)]
    assert zh["Subject"] == "北大算力：作业 4242（train）已被取消"
    assert "加速卡利用率低于 10%" in _text(zh)
    assert "作业 4242。" in _text(zh)
    en = mails[("bob@example.org",)]
    assert en["Subject"] == "北大算力: Job 4242 (train) was cancelled"
    assert "so the job was cancelled to free them" in _text(en)


def test_the_monthly_report_goes_to_each_language_with_its_own_pdf(
    used: Engine, smtp: tuple[Inbox, Mailer]
) -> None:
    inbox, mailer = smtp
    report = {"recipients": ["board@example.org", "cfo@example.org"]}
    cfg = load_config(
        {**CONFIG, "monthly_report": report, "languages": {"board@example.org": "zh_CN"}}
    )
    with used.connect() as conn:
        mailer.send(monthly_report_mails(conn, cfg, NOW))
    mails = {tuple(to): m for to, m in inbox.take()}
    zh = mails[("board@example.org",)]
    assert zh["Subject"] == "AIPool 用量报表：2026年11月"
    assert "GPU 5.50 卡时" in _text(zh)
    (pdf,) = [p for p in zh.walk() if p.get_content_type() == "application/pdf"]
    assert pdf.get_filename() == "aipool-usage-2026-11-zh_CN.pdf"
    assert mails[("cfo@example.org",)]["Subject"] == "AIPool usage report for Nov 2026"


def test_a_bad_language_is_refused() -> None:
    with pytest.raises(AlertConfigError, match="languages"):
        load_config({**CONFIG, "languages": {"alice": "fr"}})
    with pytest.raises(AlertConfigError, match="locale"):
        load_config({**CONFIG, "locale": "de"})
