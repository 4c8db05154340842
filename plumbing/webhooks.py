"""Posting a message to a webhook: a generic JSON receiver or a chat robot, in its format.

* ``webhook``: the caller's JSON document as it is;
* ``wecom`` (企业微信 group robot): ``{"msgtype": "text", "text": {"content": …}}`` or
  ``markdown`` with ``markdown.content``; it answers ``{"errcode": 0}``;
* ``dingtalk`` (钉钉 custom robot): ``msgtype`` ``text`` (``text.content``) or ``markdown``
  (``markdown.title``, ``markdown.text``); with a secret, ``timestamp`` (ms) and ``sign`` =
  base64(HMAC-SHA256(secret, "timestamp\\nsecret")) are added to the URL's query; it answers
  ``{"errcode": 0}``;
* ``feishu`` (飞书 custom bot): ``{"msg_type": "text", "content": {"text": …}}``; with a secret,
  ``timestamp`` (s) and ``sign`` = base64(HMAC-SHA256 keyed with "timestamp\\nsecret" over
  nothing) in the body; it answers ``{"code": 0}``.

Shared by accounting's alert rules and the daemons' notices. A hook's URL and secret are
credentials: they never appear in an :class:`Outcome`, a ``repr`` or a log line.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import httpx


class HookType(StrEnum):
    WEBHOOK = "webhook"
    WECOM = "wecom"
    DINGTALK = "dingtalk"
    FEISHU = "feishu"


ROBOTS = (HookType.WECOM, HookType.DINGTALK, HookType.FEISHU)


@dataclass(frozen=True, slots=True)
class Hook:
    type: HookType
    url: str = field(repr=False)
    secret: str = field(default="", repr=False)
    #: text or markdown (WeCom, DingTalk)
    format: str = "text"


@dataclass(frozen=True, slots=True)
class Message:
    """What one post says: a title and a text for the robots, a document for JSON receivers."""

    title: str
    text: str
    document: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    http_status: int | None = None
    error: str = ""


def dingtalk_sign(secret: str, millis: int) -> str:
    digest = hmac.new(secret.encode(), f"{millis}\n{secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def feishu_sign(secret: str, seconds: int) -> str:
    digest = hmac.new(f"{seconds}\n{secret}".encode(), b"", hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def request(hook: Hook, msg: Message, now: float) -> tuple[str, dict[str, str], dict[str, Any]]:
    """``(url, query parameters, JSON body)`` of one post."""
    title, text = msg.title, msg.text
    params: dict[str, str] = {}
    body: dict[str, Any]
    markdown = hook.format == "markdown"
    if hook.type is HookType.WECOM:
        body = (
            {"msgtype": "markdown", "markdown": {"content": f"**{title}**\n> {text}"}}
            if markdown
            else {"msgtype": "text", "text": {"content": f"{title}\n{text}"}}
        )
    elif hook.type is HookType.DINGTALK:
        body = (
            {"msgtype": "markdown", "markdown": {"title": title, "text": f"### {title}\n{text}"}}
            if markdown
            else {"msgtype": "text", "text": {"content": f"{title}\n{text}"}}
        )
        if hook.secret:
            millis = int(now * 1000)
            params = {"timestamp": str(millis), "sign": dingtalk_sign(hook.secret, millis)}
    elif hook.type is HookType.FEISHU:
        body = {"msg_type": "text", "content": {"text": f"{title}\n{text}"}}
        if hook.secret:
            seconds = int(now)
            body = {"timestamp": str(seconds), "sign": feishu_sign(hook.secret, seconds), **body}
    else:
        body = dict(msg.document)
    return hook.url, params, body


def _robot_error(kind: HookType, answer: Any) -> str:
    """The robots answer 200 with an error code in the body when they refuse a message."""
    if not isinstance(answer, dict):
        return ""
    key = {HookType.FEISHU: "code"}.get(kind, "errcode")
    code = answer.get(key, answer.get("StatusCode", 0))
    if code in (0, None):
        return ""
    return f"{key} {code}: {str(answer.get('errmsg') or answer.get('msg') or '')[:200]}"


def post(client: httpx.Client, hook: Hook, msg: Message, now: float) -> Outcome:
    """One attempt; never raises for the receiver's failures (they are the outcome)."""
    url, params, body = request(hook, msg, now)
    try:
        # merged, not replaced: DingTalk's URL carries its access_token in the query
        res = client.post(httpx.URL(url).copy_merge_params(params), json=body)
    except httpx.HTTPError as exc:
        # the exception's text may carry the URL (a credential): say only its kind
        return Outcome(False, None, type(exc).__name__)
    if res.status_code >= 300:
        return Outcome(False, res.status_code, f"HTTP {res.status_code}")
    if hook.type in ROBOTS:
        try:
            refused = _robot_error(hook.type, res.json())
        except ValueError:
            refused = ""
        if refused:
            return Outcome(False, res.status_code, refused)
    return Outcome(True, res.status_code)
