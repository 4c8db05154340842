"""Delivering an alert through its channels: e-mail, and webhooks in their robots' formats
(:mod:`plumbing.webhooks`, shared with the daemons' notices).

Each attempt's outcome is an :class:`Outcome`; the URL and secret never appear in one (they
are credentials), nor in a log line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from accounting.alert_rules import Channel, Rule, Severity
from plumbing import webhooks
from plumbing.mail import Mail, Mailer, MailError, MailTemplates
from plumbing.webhooks import Outcome
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


# ---------------------------------------------------------------------- webhooks
def _hook(channel: Channel) -> webhooks.Hook:
    return webhooks.Hook(
        webhooks.HookType(channel.type.value), channel.url, channel.secret, channel.format
    )


def _message(alert: Alert, locale: str) -> webhooks.Message:
    return webhooks.Message(alert.title(locale), alert.text(locale), alert.document(locale))


def webhook_request(
    channel: Channel, alert: Alert, locale: str, now: float
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """``(url, query parameters, JSON body)`` of one webhook message."""
    return webhooks.request(_hook(channel), _message(alert, locale), now)


def post_webhook(
    client: httpx.Client, channel: Channel, alert: Alert, locale: str, now: float
) -> Outcome:
    return webhooks.post(client, _hook(channel), _message(alert, locale), now)


# ---------------------------------------------------------------------- e-mail
def alert_mails(
    channel: Channel,
    alert: Alert,
    addresses: tuple[str, ...],
    language: Callable[[str], str],
) -> list[Mail]:
    """One mail per language of the channel's readers; a rule from the alert kinds before
    rules keeps its template for its firing mail."""
    from plumbing.mail import by_language

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
