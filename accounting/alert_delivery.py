"""Sending an alert through a rule's channels, with retries, every attempt recorded.

An urgent rule goes to all of its channels and to every channel marked ``urgent``; a normal
rule goes to its channels in order until one takes it (the first is the usual one, the
others stand in when it fails). Each channel is tried ``attempts`` times, waiting
``backoff_s``, then twice that, … between tries, within the cycle; a firing message that no
channel took is tried again next cycle (its state stays pending).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import count

import httpx
from sqlalchemy import Engine, insert

from accounting.alert_channels import Alert, alert_mails, post_webhook, send_mail
from accounting.alert_eval import Observation
from accounting.alert_models import AlertDelivery
from accounting.alert_rules import Channel, ChannelType, Level, Severity
from plumbing.mail import MailConfig, Mailer
from plumbing.retry import until_ok
from plumbing.webhooks import Outcome

log = logging.getLogger("aipool.accounting.alerts")


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    attempts: int = 3
    backoff_s: float = 2.0
    timeout_s: float = 10.0


class Deliverer:
    """The :data:`accounting.alert_eval.Deliver` of a cycle: channels by name, one HTTP
    client, one mailer."""

    def __init__(
        self,
        engine: Engine,
        channels: Sequence[Channel],
        mailer: Mailer,
        mail: MailConfig,
        *,
        platform_admins: Sequence[str] = (),
        settings: DeliverySettings = DeliverySettings(),
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.channels = {c.name: c for c in channels}
        self.mailer = mailer
        self.mail = mail
        self.platform_admins = tuple(platform_admins)
        self.settings = settings
        self.http = http or httpx.Client(timeout=settings.timeout_s)
        self.sleep = sleep
        self.clock = clock

    def __call__(self, alert: Alert, obs: Observation) -> bool:
        urgent = alert.rule.severity is Severity.URGENT
        names = list(dict.fromkeys(alert.rule.channels))
        if urgent:
            names += [n for n, c in self.channels.items() if c.urgent and n not in names]
        delivered = False
        for name in names:
            channel = self.channels.get(name)
            if channel is None:
                self._record(alert, obs, name, 1, Outcome(False, None, "no such channel"))
                continue
            if self._through(channel, alert, obs):
                delivered = True
                if not urgent:
                    break
        return delivered

    def _through(self, channel: Channel, alert: Alert, obs: Observation) -> bool:
        tries = count(1)

        def once() -> Outcome:
            outcome = self._once(channel, alert, obs)
            self._record(alert, obs, channel.name, next(tries), outcome)
            return outcome

        def failed(attempt: int, outcome: Outcome) -> None:
            # the channel's name only: its URL and secret are credentials
            log.warning(
                "alert %s/%s through %s, attempt %d: %s",
                alert.rule.name,
                alert.subject,
                channel.name,
                attempt,
                outcome.error,
            )

        outcome = until_ok(
            once,
            lambda outcome: outcome.ok,
            self.settings.attempts,
            self.settings.backoff_s,
            self.sleep,
            failed,
        )
        return outcome.ok

    def _once(self, channel: Channel, alert: Alert, obs: Observation) -> Outcome:
        if channel.type is ChannelType.EMAIL:
            readers = self._readers(channel, obs)
            mails = alert_mails(channel, alert, tuple(readers), lambda a: readers[a])
            return send_mail(self.mailer, mails)
        # webhooks speak the site's language: a group has no one reader
        return post_webhook(self.http, channel, alert, self.mail.locale, self.clock())

    def _readers(self, channel: Channel, obs: Observation) -> Mapping[str, str]:
        """Address -> language of each reader of an e-mail channel."""
        out = {a: self.mail.language(a) for a in channel.recipients}
        if "platform_admins" in channel.roles:
            out |= {a: self.mail.language(a) for a in self.platform_admins}
        if "subject" in channel.roles and obs.level is Level.USER and obs.name:
            out[self.mail.address(obs.name)] = self.mail.user_language(obs.name)
        return out

    def _record(
        self, alert: Alert, obs: Observation, channel: str, attempt: int, outcome: Outcome
    ) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(AlertDelivery).values(
                    rule=alert.rule.name,
                    subject=alert.subject[:128],
                    scope_level=obs.level.value,
                    scope_name=obs.name,
                    channel=channel,
                    kind=alert.kind,
                    attempt=attempt,
                    ok=outcome.ok,
                    http_status=outcome.http_status,
                    error=outcome.error[:512],
                    at=alert.at,
                )
            )
