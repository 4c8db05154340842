"""Delivering an alert through its channels: e-mail, and webhooks in their robots' formats.

* generic ``webhook``: one JSON object (``rule``, ``subject``, ``state`` firing or resolved, …);
* ``wecom`` (企业微信 group robot): ``{"msgtype": "text", "text": {"content": …}}`` or
  ``markdown`` with ``markdown.content``; it answers ``{"errcode": 0}``;
* ``dingtalk`` (钉钉 custom robot): ``msgtype`` ``text`` (``text.content``) or ``markdown``
  (``markdown.title``, ``markdown.text``); with a secret, ``timestamp`` (ms) and ``sign`` =
  base64(HMAC-SHA256(secret, "timestamp\\nsecret")) are added to the URL's query; it answers
  ``{"errcode": 0}``;
* ``feishu`` (飞书 custom bot): ``{"msg_type": "text", "content": {"text": …}}``; with a secret,
  ``timestamp`` (s) and ``sign`` = base64(HMAC-SHA256 keyed with "timestamp\\nsecret" over
  nothing) in the body; it answers ``{"code": 0}``.

Each attempt's outcome is a :class:`Outcome`; the URL and secret never appear in one (they
are credentials), nor in a log line.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from accounting.alert_rules import Channel, ChannelType, Rule, Severity
from slurm_plugins.common.mail import Mail, Mailer, MailError, MailTemplates
from translations import N_, gettext

TEMPLATES = MailTemplates("accounting")
FIRE, RECOVER = "fire", "recover"


@dataclass(frozen=True, slots=True)
class Alert:
    """A firing or recovery message of one rule about one subject."""

    rule: Rule
    subject: str
    kind: str  # fire | recover
    value: float
    since: datetime
    at: datetime
    site: str = "AIPool"
    #: the rule's values for an e-mail template (the kinds that came before rules)
    context: Mapping[str, Any] = field(default_factory=dict)

    def title(self, locale: str | None) -> str:
        if self.kind == RECOVER:
            return gettext(locale, N_("%(site)s: %(rule)s has recovered"), **self._values())
        if self.rule.severity is Severity.URGENT:
            return gettext(locale, N_("%(site)s urgent alert: %(rule)s"), **self._values())
        return gettext(locale, N_("%(site)s alert: %(rule)s"), **self._values())

    def text(self, locale: str | None) -> str:
        if self.kind == RECOVER:
            msg = N_(
                "The rule %(rule)s no longer holds for %(subject)s: the value is now %(value)s."
            )
        else:
            msg = N_(
                "The rule %(rule)s holds for %(subject)s: the value %(value)s is "
                "%(comparator)s %(threshold)s (since %(since)s UTC)."
            )
        return gettext(locale, msg, **self._values())

    def _values(self) -> dict[str, str]:
        return {
            "site": self.site,
            "rule": self.rule.name,
            "subject": self.subject,
            "value": f"{self.value:g}",
            "comparator": self.rule.comparator,
            "threshold": f"{self.rule.threshold:g}",
            "since": self.since.strftime("%Y-%m-%d %H:%M"),
        }

    def document(self, locale: str | None) -> dict[str, Any]:
        """The generic webhook's body."""
        return {
            "rule": self.rule.name,
            "subject": self.subject,
            "state": "firing" if self.kind == FIRE else "resolved",
            "severity": self.rule.severity.value,
            "value": self.value,
            "comparator": self.rule.comparator,
            "threshold": self.rule.threshold,
            "scope": {"level": self.rule.scope.level.value, "name": self.rule.scope.name},
            "since": self.since.isoformat(),
            "at": self.at.isoformat(),
            "title": self.title(locale),
            "text": self.text(locale),
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    http_status: int | None = None
    error: str = ""


# ---------------------------------------------------------------------- webhook bodies
def _dingtalk_sign(secret: str, millis: int) -> str:
    digest = hmac.new(secret.encode(), f"{millis}\n{secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _feishu_sign(secret: str, seconds: int) -> str:
    digest = hmac.new(f"{seconds}\n{secret}".encode(), b"", hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def webhook_request(
    channel: Channel, alert: Alert, locale: str, now: float
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """``(url, query parameters, JSON body)`` of one webhook message."""
    title, text = alert.title(locale), alert.text(locale)
    params: dict[str, str] = {}
    body: dict[str, Any]
    kind, markdown = channel.type, channel.format == "markdown"
    if kind is ChannelType.WECOM:
        body = (
            {"msgtype": "markdown", "markdown": {"content": f"**{title}**\n> {text}"}}
            if markdown
            else {"msgtype": "text", "text": {"content": f"{title}\n{text}"}}
        )
    elif kind is ChannelType.DINGTALK:
        body = (
            {"msgtype": "markdown", "markdown": {"title": title, "text": f"### {title}\n{text}"}}
            if markdown
            else {"msgtype": "text", "text": {"content": f"{title}\n{text}"}}
        )
        if channel.secret:
            millis = int(now * 1000)
            params = {"timestamp": str(millis), "sign": _dingtalk_sign(channel.secret, millis)}
    elif kind is ChannelType.FEISHU:
        body = {"msg_type": "text", "content": {"text": f"{title}\n{text}"}}
        if channel.secret:
            seconds = int(now)
            body = {
                "timestamp": str(seconds),
                "sign": _feishu_sign(channel.secret, seconds),
                **body,
            }
    else:
        body = alert.document(locale)
    return channel.url, params, body


def _robot_error(kind: ChannelType, answer: Any) -> str:
    """The robots answer 200 with an error code in the body when they refuse a message."""
    if not isinstance(answer, dict):
        return ""
    key = {ChannelType.FEISHU: "code"}.get(kind, "errcode")
    code = answer.get(key, answer.get("StatusCode", 0))
    if code in (0, None):
        return ""
    return f"{key} {code}: {str(answer.get('errmsg') or answer.get('msg') or '')[:200]}"


def post_webhook(
    client: httpx.Client, channel: Channel, alert: Alert, locale: str, now: float
) -> Outcome:
    url, params, body = webhook_request(channel, alert, locale, now)
    try:
        # merged, not replaced: DingTalk's URL carries its access_token in the query
        res = client.post(httpx.URL(url).copy_merge_params(params), json=body)
    except httpx.HTTPError as exc:
        # the exception's text may carry the URL (a credential): say only its kind
        return Outcome(False, None, type(exc).__name__)
    if res.status_code >= 300:
        return Outcome(False, res.status_code, f"HTTP {res.status_code}")
    if channel.type in (ChannelType.WECOM, ChannelType.DINGTALK, ChannelType.FEISHU):
        try:
            refused = _robot_error(channel.type, res.json())
        except ValueError:
            refused = ""
        if refused:
            return Outcome(False, res.status_code, refused)
    return Outcome(True, res.status_code)


# ---------------------------------------------------------------------- e-mail
def alert_mails(
    channel: Channel,
    alert: Alert,
    addresses: tuple[str, ...],
    language: Callable[[str], str],
) -> list[Mail]:
    """One mail per language of the channel's readers; a rule from the alert kinds before
    rules keeps its template for its firing mail."""
    from slurm_plugins.common.mail import by_language

    mails = []
    for lang, to in by_language(list(addresses), language).items():
        if alert.kind == FIRE and alert.rule.template:
            context = {**alert.context, "site": alert.site}
            mails.append(Mail(to, *TEMPLATES.render(alert.rule.template, context, lang)))
        else:
            context = {
                "title": alert.title(lang),
                "text": alert.text(lang),
                "site": alert.site,
            }
            mails.append(Mail(to, *TEMPLATES.render("alert_rule", context, lang)))
    return mails


def send_mail(mailer: Mailer, mails: list[Mail]) -> Outcome:
    if not mails:
        return Outcome(False, None, "no recipients")
    try:
        mailer.send(mails)
    except MailError as exc:
        return Outcome(False, None, str(exc)[:500])
    return Outcome(True)


def wall_clock() -> float:
    return time.time()
