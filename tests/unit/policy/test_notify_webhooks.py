"""The daemons' notices (idle reaper, migrations, node alerts) posted to chat robots and JSON
receivers as well as mailed: a real HTTP receiver on loopback checks each format, the site's
language, the retry of a receiver that fails twice, and that a URL never reaches the log."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plumbing.errors import ConfigError
from plumbing.notify import Notification, WebhookSink
from plumbing.webhooks import Hook, HookType
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.daemon import notifier_for
from tests.unit.accounting.receivers import Receiver, serving
from translations import N_, Message

SECRET = "SEC-notify-0123456789"
TITLE = N_("Job %(job)s (%(name)s) was requeued")


@pytest.fixture(scope="module")
def server() -> Iterator[Receiver]:
    with serving() as srv:
        yield srv


@pytest.fixture
def receiver(server: Receiver) -> Receiver:
    return server.reset()


def _note() -> Notification:
    return Notification(
        "idle",
        42,
        ("alice",),
        "job 42 (train) requeued",
        "idle for 30 minutes",
        title=Message.of(TITLE, job=42, name="train"),
    )


def _config(tmp_path: Path, notify: dict[str, Any]) -> Any:
    raw = {"state_dir": str(tmp_path), "notify": notify, "policies": [{"name": "fifo"}]}
    return parse_config(raw, base=tmp_path)


def test_notices_reach_each_robot_in_its_format_and_the_sites_language(
    receiver: Receiver, tmp_path: Path
) -> None:
    base = receiver.base()
    hooks = [
        {"type": "wecom", "url": f"{base}/wecom?key=k1"},
        {"type": "dingtalk", "url": f"{base}/ding?access_token=t1", "secret": SECRET},
        {"type": "feishu", "url": f"{base}/feishu/hook/x", "format": "text"},
        {"type": "webhook", "url": f"{base}/hook"},
    ]
    config = _config(tmp_path, {"log": False, "webhooks": hooks, "locale": "zh_CN"})
    notifier_for(config).send(_note())

    [wecom] = receiver.to("/wecom")
    assert wecom["msgtype"] == "text"
    zh_title = Message.of(TITLE, job=42, name="train").render("zh_CN")
    assert zh_title != "Job 42 (train) was requeued", "the title has a Chinese translation"
    assert wecom["text"]["content"].startswith(zh_title)
    [(_, query, ding)] = [r for r in receiver.requests if r[0] == "/ding"]
    assert ding["msgtype"] == "text"
    assert query["access_token"] == "t1", "the robot's token stays in the query"
    expected = hmac.new(
        SECRET.encode(), f"{query['timestamp']}\n{SECRET}".encode(), hashlib.sha256
    ).digest()
    assert query["sign"] == base64.b64encode(expected).decode()
    [feishu] = receiver.to("/feishu/hook/x")
    assert feishu["msg_type"] == "text"
    assert zh_title in feishu["content"]["text"]
    [hook] = receiver.to("/hook")
    assert (hook["kind"], hook["job_id"], hook["users"]) == ("idle", 42, ["alice"])


def test_a_receiver_that_fails_twice_gets_the_third_try(receiver: Receiver) -> None:
    receiver.script["/wecom"] = [500, 500]
    waits: list[float] = []
    hook = Hook(HookType.WECOM, f"{receiver.base()}/wecom?key=k1")
    WebhookSink(hook, first_wait_s=0.5, sleep=waits.append).send(_note())
    assert len(receiver.to("/wecom")) == 3
    assert waits == [0.5, 1.0]


def test_a_receiver_that_keeps_failing_is_logged_without_its_url(
    receiver: Receiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.script["/wecom"] = [500, 500, 500]
    url = f"{receiver.base()}/wecom?key=very-secret-key"
    config = _config(tmp_path, {"log": False, "webhooks": [{"type": "wecom", "url": url}]})
    notifier = notifier_for(config)
    for sink in getattr(notifier, "sinks", []):
        sink.sleep = lambda _s: None
    with caplog.at_level(logging.WARNING):
        notifier.send(_note())  # MultiSink: a broken sink does not stop the cycle
    assert len(receiver.to("/wecom")) == 3
    assert "HTTP 500" in caplog.text
    assert "very-secret-key" not in caplog.text
    assert receiver.base() not in caplog.text


@pytest.mark.parametrize(
    ("hook", "field"),
    [
        ({"type": "pager", "url": "https://x.example.org/"}, "type"),
        ({"type": "wecom", "url": "ftp://x.example.org/"}, "url"),
        ({"type": "wecom"}, "url"),
        ({"type": "dingtalk", "url": "https://x.example.org/", "format": "html"}, "format"),
    ],
)
def test_a_bad_webhook_is_refused_naming_its_field(
    tmp_path: Path, hook: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, {"webhooks": [hook]})
    assert f"notify.webhooks[0].{field}" in str(err.value)
