"""Alert rules against real receivers on loopback: an HTTP server (one per module, a path per
channel) that checks each webhook format's body and signature, aiosmtpd for e-mail, and a
Prometheus HTTP API answered by the same server. A rule fires once per episode after its
duration, stays quiet, recovers once; a receiver that fails twice gets the third try; each
attempt is recorded; an urgent rule reaches every channel."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import httpx
import pytest
from sqlalchemy import Engine, insert, select

from accounting.alert_channels import FIRE, Alert, webhook_request
from accounting.alert_cli import alert_cycle
from accounting.alert_delivery import Deliverer, DeliverySettings
from accounting.alert_eval import Facts, PoolCards, prometheus, run_rules
from accounting.alert_models import AlertChannelRow, AlertDelivery, AlertRuleRow, AlertState
from accounting.alert_rules import (
    Channel,
    load_channel,
    load_rule,
    masked,
)
from accounting.alerts import load_config
from plumbing.mail import MailConfig, Mailer
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Node
from tests.unit.accounting.conftest import Inbox
from tests.unit.accounting.receivers import Receiver
from tests.unit.accounting.test_alerts import _gpu_node, _text

T0 = datetime(2026, 11, 20, 12, tzinfo=UTC)
SECRET = "SECfeedface0123456789"
FULL = {("gpu", "GPU"): PoolCards(8, 8, 3)}
ROOM = {("gpu", "GPU"): PoolCards(8, 5, 0)}


def _channels(base: str) -> list[Channel]:
    docs: list[dict[str, Any]] = [
        {"name": "hook", "type": "webhook", "url": f"{base}/hook"},
        {"name": "wecom", "type": "wecom", "url": f"{base}/wecom?key=k1"},
        {"name": "wecom-md", "type": "wecom", "url": f"{base}/wecom-md", "format": "markdown"},
        {"name": "ding", "type": "dingtalk", "url": f"{base}/ding?access_token=t1"},
        {"name": "ding-signed", "type": "dingtalk", "url": f"{base}/ding-signed?access_token=t2"}
        | {"secret": SECRET, "format": "markdown"},
        {"name": "feishu", "type": "feishu", "url": f"{base}/feishu/hook/x", "secret": SECRET},
        {"name": "mail", "type": "email", "recipients": ["ops@example.org"]},
    ]
    return [load_channel(d) for d in docs]


def _rule(channels: list[str], **extra: Any) -> Any:
    return load_rule(
        {
            "name": "pool-full",
            "query": {"kind": "usage", "measure": "pool_free_cards"},
            "comparator": "<=",
            "threshold": 0,
            "channels": channels,
            **extra,
        }
    )


class Run:
    """Cycles of one rule over one engine, through the receiver's channels."""

    def __init__(self, engine: Engine, receiver: Receiver, smtp_port: int = 1) -> None:
        self.engine = engine
        self.sleeps: list[float] = []
        mail = MailConfig(_smtp(smtp_port), locale="en")
        self.deliver = Deliverer(
            engine,
            _channels(receiver.base()),
            Mailer(mail.smtp),
            mail,
            settings=DeliverySettings(attempts=3, backoff_s=0.5),
            http=httpx.Client(timeout=5),
            sleep=self.sleeps.append,
            clock=T0.timestamp,
        )

    def __call__(self, rule: Any, pools: Any, at: datetime, **facts: Any) -> list[str]:
        return run_rules(self.engine, [rule], Facts(at, pools=pools, **facts), self.deliver, at)

    def deliveries(self) -> list[tuple[str, str, int, bool, int | None]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(
                    AlertDelivery.channel,
                    AlertDelivery.kind,
                    AlertDelivery.attempt,
                    AlertDelivery.ok,
                    AlertDelivery.http_status,
                ).order_by(AlertDelivery.id)
            ).all()
        return [tuple(r) for r in rows]  # type: ignore[misc]

    def states(self) -> list[tuple[str, str]]:
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(select(AlertState.subject, AlertState.state))]  # type: ignore[misc]


def _smtp(port: int) -> Any:
    from plumbing.mail import SmtpSettings

    return SmtpSettings("127.0.0.1", port, "aipool@example.org", timeout_s=2)


def test_fires_after_its_duration_once_per_episode_and_recovers_once(
    engine: Engine, receiver: Receiver
) -> None:
    run = Run(engine, receiver)
    rule = _rule(["hook"], **{"for": "10m"})
    assert run(rule, FULL, T0) == []  # holds, but not yet for 10 minutes
    assert run.states() == [("gpu/GPU", "pending")]
    assert run(rule, FULL, T0 + timedelta(minutes=5)) == []
    assert run(rule, FULL, T0 + timedelta(minutes=10)) == ["fired pool-full gpu/GPU"]
    assert run(rule, FULL, T0 + timedelta(minutes=15)) == []  # still holding: quiet
    assert run(rule, ROOM, T0 + timedelta(minutes=20)) == ["recovered pool-full gpu/GPU"]
    assert run(rule, ROOM, T0 + timedelta(minutes=25)) == []
    assert run.states() == []
    fire, recover = receiver.to("/hook")
    assert fire["state"] == "firing"
    assert fire["rule"] == "pool-full"
    assert fire["subject"] == "gpu/GPU"
    assert fire["value"] == 0
    assert fire["since"] == T0.isoformat()
    assert fire["severity"] == "normal"
    assert "gpu/GPU" in fire["text"]
    assert recover["state"] == "resolved"
    assert recover["value"] == 3
    assert run.deliveries() == [("hook", "fire", 1, True, 200), ("hook", "recover", 1, True, 200)]


def test_a_condition_that_stops_before_its_duration_sends_nothing(
    engine: Engine, receiver: Receiver
) -> None:
    run = Run(engine, receiver)
    rule = _rule(["hook"], **{"for": "10m"})
    run(rule, FULL, T0)
    run(rule, ROOM, T0 + timedelta(minutes=5))
    run(rule, FULL, T0 + timedelta(minutes=6))  # a new pending spell: the clock restarts
    assert run(rule, FULL, T0 + timedelta(minutes=12)) == []
    assert receiver.requests == []


def test_a_receiver_that_fails_twice_gets_the_third_try(engine: Engine, receiver: Receiver) -> None:
    receiver.script["/wecom"] = [500, 500]
    run = Run(engine, receiver)
    assert run(_rule(["wecom"]), FULL, T0) == ["fired pool-full gpu/GPU"]
    assert len(receiver.to("/wecom")) == 3
    assert run.deliveries() == [
        ("wecom", "fire", 1, False, 500),
        ("wecom", "fire", 2, False, 500),
        ("wecom", "fire", 3, True, 200),
    ]
    assert run.sleeps == [0.5, 1.0]  # exponential back-off between the tries


def test_a_normal_rule_falls_back_to_its_next_channel_and_retries_next_cycle(
    engine: Engine, receiver: Receiver
) -> None:
    receiver.script["/hook"] = [503] * 6
    receiver.script["/ding"] = [500] * 3
    run = Run(engine, receiver)
    rule = _rule(["hook", "ding", "wecom"])
    assert run(rule, FULL, T0) == ["fired pool-full gpu/GPU"]
    # the first two fail all three tries each; the third takes it; nothing after that
    assert [(c, a, ok) for c, _, a, ok, _ in run.deliveries()] == [
        ("hook", 1, False),
        ("hook", 2, False),
        ("hook", 3, False),
        ("ding", 1, False),
        ("ding", 2, False),
        ("ding", 3, False),
        ("wecom", 1, True),
    ]
    receiver.requests.clear()
    assert run(rule, FULL, T0 + timedelta(minutes=1)) == []
    assert receiver.requests == []


def test_an_undelivered_firing_is_tried_again_next_cycle(
    engine: Engine, receiver: Receiver
) -> None:
    receiver.script["/hook"] = [500] * 3
    run = Run(engine, receiver)
    rule = _rule(["hook"])
    assert run(rule, FULL, T0) == ["not delivered pool-full gpu/GPU"]
    assert run.states() == [("gpu/GPU", "pending")]
    assert run(rule, FULL, T0 + timedelta(minutes=1)) == ["fired pool-full gpu/GPU"]
    assert run.states() == [("gpu/GPU", "firing")]
    assert [ok for *_, ok, _ in run.deliveries()] == [False, False, False, True]


def _check_dingtalk(query: dict[str, str]) -> None:
    ts = query["timestamp"]
    digest = hmac.new(SECRET.encode(), f"{ts}\n{SECRET}".encode(), hashlib.sha256).digest()
    assert query["sign"] == base64.b64encode(digest).decode()
    assert int(ts) == int(T0.timestamp() * 1000)  # milliseconds
    assert query["access_token"] == "t2"


def _check_feishu(body: dict[str, Any]) -> None:
    ts = body["timestamp"]
    digest = hmac.new(f"{ts}\n{SECRET}".encode(), b"", hashlib.sha256).digest()
    assert body["sign"] == base64.b64encode(digest).decode()
    assert ts == str(int(T0.timestamp()))  # seconds, as a string


def test_an_urgent_rule_reaches_every_channel_in_its_format(
    engine: Engine, receiver: Receiver, smtp: tuple[Inbox, Mailer]
) -> None:
    inbox, mailer = smtp
    run = Run(engine, receiver, mailer.settings.port)
    names = ["hook", "wecom", "wecom-md", "ding", "ding-signed", "feishu", "mail"]
    rule = _rule(names, severity="urgent")
    assert run(rule, FULL, T0) == ["fired pool-full gpu/GPU"]
    assert {c for c, _, _, ok, _ in run.deliveries() if ok} == set(names)
    (wecom,) = receiver.to("/wecom")
    assert wecom["msgtype"] == "text"
    assert wecom["text"]["content"].startswith("AIPool urgent alert: pool-full\n")
    (wecom_md,) = receiver.to("/wecom-md")
    assert wecom_md["msgtype"] == "markdown"
    assert "**AIPool urgent alert: pool-full**" in wecom_md["markdown"]["content"]
    (ding,) = receiver.to("/ding")
    assert ding == {"msgtype": "text", "text": {"content": ding["text"]["content"]}}
    ((_, query, signed),) = [r for r in receiver.requests if r[0] == "/ding-signed"]
    _check_dingtalk(query)
    assert signed["msgtype"] == "markdown"
    assert signed["markdown"]["title"] == "AIPool urgent alert: pool-full"
    (feishu,) = receiver.to("/feishu/hook/x")
    _check_feishu(feishu)
    assert feishu["msg_type"] == "text"
    assert "gpu/GPU" in feishu["content"]["text"]
    (hook,) = receiver.to("/hook")
    assert hook["severity"] == "urgent"
    ((to, msg),) = inbox.take()
    assert to == ["ops@example.org"]
    assert msg["Subject"] == "AIPool urgent alert: pool-full"
    assert "The rule pool-full holds for gpu/GPU" in _text(msg)


def test_urgent_rules_also_reach_the_platforms_urgent_channels(
    engine: Engine, receiver: Receiver
) -> None:
    run = Run(engine, receiver)
    oncall = load_channel(
        {"name": "oncall", "type": "webhook", "url": f"{receiver.base()}/oncall", "urgent": True}
    )
    run.deliver.channels["oncall"] = oncall
    run(_rule(["hook"]), FULL, T0)
    assert receiver.to("/oncall") == []  # a normal rule: its own channel only
    run(load_rule({**_doc(), "name": "pool-urgent", "severity": "urgent"}), FULL, T0)
    assert len(receiver.to("/oncall")) == 1


def _doc() -> dict[str, Any]:
    return {
        "name": "pool-full",
        "query": {"kind": "usage", "measure": "pool_free_cards"},
        "comparator": "<=",
        "threshold": 0,
        "channels": ["hook"],
    }


def test_a_metric_rule_asks_prometheus(engine: Engine, receiver: Receiver) -> None:
    receiver.samples = [
        {"metric": {"node": "gpu1", "instance": "a:9100"}, "value": [1, "91.5"]},
        {"metric": {"node": "gpu2", "instance": "b:9100"}, "value": [1, "40"]},
        {"metric": {"node": "n" * 300}, "value": [1, "99"]},  # cut to the state's column
    ]
    rule = load_rule(
        {
            "name": "hot-cards",
            "query": {
                "kind": "metric",
                "promql": "max by (node) (aipool_card_temperature_celsius)",
                "subject_label": "node",
            },
            "comparator": ">",
            "threshold": 85,
            "channels": ["hook"],
        }
    )
    run = Run(engine, receiver)
    with httpx.Client(timeout=5) as http:
        metric = prometheus(http, receiver.base())
        assert run(rule, {}, T0, metric=metric) == [
            "fired hot-cards gpu1",
            f"fired hot-cards {'n' * 128}",
        ]
        assert run(rule, {}, T0 + timedelta(minutes=1), metric=metric) == []
    body, _ = receiver.to("/hook")
    assert body["value"] == 91.5
    assert body["subject"] == "gpu1"


def test_a_metric_rule_without_prometheus_is_skipped_and_keeps_its_state(
    engine: Engine, receiver: Receiver
) -> None:
    rule = load_rule({**_doc(), "name": "m", "query": {"kind": "metric", "promql": "up == 0"}})
    run = Run(engine, receiver)
    assert run(rule, {}, T0) == ["skipped m: no Prometheus is configured for metric rules"]


def test_secrets_are_neither_shown_nor_logged(
    engine: Engine, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    channel = load_channel(
        {"name": "d", "type": "dingtalk", "url": "http://127.0.0.1:1/robot?access_token=tok"}
        | {"secret": SECRET}
    )
    assert "tok" not in repr(channel)
    assert SECRET not in repr(channel)
    assert masked(SECRET) != SECRET
    assert SECRET[8:] not in masked(SECRET)
    run = Run(engine, receiver)
    run.deliver.channels["d"] = channel
    with caplog.at_level(logging.WARNING):
        assert run(_rule(["d"]), FULL, T0) == ["not delivered pool-full gpu/GPU"]
    assert "access_token" not in caplog.text
    assert SECRET not in caplog.text
    with engine.connect() as conn:
        errors = conn.scalars(select(AlertDelivery.error)).all()
    assert errors == ["ConnectError"] * 3


def test_webhook_bodies_are_in_the_sites_language() -> None:
    rule = _rule(["hook"])
    alert = Alert(rule, "gpu/GPU", FIRE, 0, T0, T0)
    channel = load_channel({"name": "w", "type": "wecom", "url": "http://x.example/w"})
    _, _, en = webhook_request(channel, alert, "en", T0.timestamp())
    _, _, zh = webhook_request(channel, alert, "zh_CN", T0.timestamp())
    assert en["text"]["content"].startswith("AIPool alert: pool-full")
    assert zh["msgtype"] == "text"
    assert "pool-full" in zh["text"]["content"]


# ---------------------------------------------------------------------- the scheduler
class _Cluster:
    """What the alert cycle asks Slurm: nodes and jobs."""

    def __init__(self, nodes: list[Node]) -> None:
        self._nodes = nodes

    def nodes(self) -> list[Node]:
        return self._nodes

    def jobs(self) -> list[Any]:
        return []


def test_the_scheduler_evaluates_the_files_rules_and_the_portals(
    engine: Engine, receiver: Receiver
) -> None:
    portal_hook = {"name": "portal-hook", "type": "webhook", "url": f"{receiver.base()}/portal"}
    with engine.begin() as conn:
        conn.execute(
            insert(AlertChannelRow).values(
                name="portal-hook",
                scope_level="platform",
                scope_name="",
                document=portal_hook,
                created_by="admin",
                updated_at=T0,
            )
        )
        for name, doc in (
            ("portal-rule", {**_doc(), "name": "portal-rule", "channels": ["portal-hook"]}),
            ("broken", {"name": "broken"}),  # no longer valid: left out, the others go on
        ):
            conn.execute(
                insert(AlertRuleRow).values(
                    name=name,
                    scope_level="platform",
                    scope_name="",
                    document=doc,
                    created_by="admin",
                    updated_at=T0,
                )
            )
    cfg = load_config(
        {
            "channels": [{"name": "hook", "type": "webhook", "url": f"{receiver.base()}/hook"}],
            "rules": [_doc()],
            "delivery": {"backoff_s": 0},
        }
    )
    cluster = cast(SlurmClient, _Cluster([_gpu_node("gpu1", 4, 0)]))
    dry = alert_cycle(engine, cluster, cfg, dry_run=True, now=T0)
    assert dry == [
        "pool-full gpu/GPU = 0 -> hook",
        "portal-rule gpu/GPU = 0 -> portal-hook",
    ]
    assert receiver.requests == []
    lines = alert_cycle(engine, cluster, cfg, now=T0)
    assert lines == ["fired pool-full gpu/GPU", "fired portal-rule gpu/GPU"]
    assert len(receiver.to("/hook")) == 1
    assert len(receiver.to("/portal")) == 1
    assert alert_cycle(engine, cluster, cfg, now=T0 + timedelta(minutes=15)) == []


def test_a_project_is_told_before_its_money_runs_out(engine: Engine, receiver: Receiver) -> None:
    """The balance less this month's charges so far, per billing account: a manager's rule
    fires when nlp has less than 100 yuan left, and the other account stays quiet."""
    from decimal import Decimal

    from sqlalchemy.orm import Session

    from accounting.alert_rules import AlertRuleError
    from accounting.billing_models import BillingAccount, Price, PricePlan
    from accounting.ingest import ingest
    from accounting.meter import NodeCards, Topology, meter
    from tests.unit.accounting.builders import acct

    topo = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})
    job = acct(1, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=40, start=T0 - timedelta(days=3))
    ingest(engine, [u for u in [meter(job, topo)] if u is not None])
    with Session(engine) as s:
        plan = PricePlan(name="std", currency="CNY", storage_price=Decimal(0))
        s.add(plan)
        s.flush()
        s.add(Price(plan_id=plan.id, resource="gpu", model="", rate=Decimal("2.50")))
        s.add(BillingAccount(tenant="nlp", plan_id=plan.id, balance=Decimal("180.00")))
        s.add(BillingAccount(tenant="vision", plan_id=plan.id, balance=Decimal("500.00")))
        s.commit()
    rule = {
        "name": "money-low",
        "query": {"kind": "usage", "measure": "balance_left"},
        "comparator": "<",
        "threshold": 100,
        "scope": {"level": "project", "name": ""},
        "channels": ["hook"],
    }
    cfg = load_config(
        {
            "channels": [{"name": "hook", "type": "webhook", "url": f"{receiver.base()}/hook"}],
            "rules": [rule],
            "delivery": {"backoff_s": 0},
        }
    )
    cluster = cast(SlurmClient, _Cluster([_gpu_node("gpu1", 4, 0)]))
    # 180 less 40 card-hours at 2.50 this month: 80 left; vision's 500 does not hold
    assert alert_cycle(engine, cluster, cfg, dry_run=True, now=T0) == ["money-low nlp = 80 -> hook"]
    assert alert_cycle(engine, cluster, cfg, now=T0) == ["fired money-low nlp"]
    (fired,) = receiver.to("/hook")
    assert (fired["subject"], fired["value"]) == ("nlp", 80)
    with pytest.raises(AlertRuleError, match="domain or project"):
        load_rule({**rule, "scope": {"level": "user", "name": "alice"}})
