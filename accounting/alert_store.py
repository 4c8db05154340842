"""The rules and channels the portal saved, as the scheduler reads them.

A stored document that no longer validates (written by an older version, or edited by hand)
is left out of the cycle with a warning rather than stopping every other rule.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, select

from accounting.alert_models import AlertChannelRow, AlertRuleRow
from accounting.alert_rules import AlertRuleError, Channel, Rule, load_channel, load_rule

log = logging.getLogger("aipool.accounting.alerts")


def stored(conn: Connection) -> tuple[list[Rule], list[Channel]]:
    rules, channels = [], []
    for name, doc in conn.execute(select(AlertRuleRow.name, AlertRuleRow.document)).all():
        try:
            rules.append(load_rule(doc))
        except AlertRuleError as exc:
            log.warning("stored alert rule %s left out: %s", name, exc)
    for name, doc in conn.execute(select(AlertChannelRow.name, AlertChannelRow.document)).all():
        try:
            channels.append(load_channel(doc))
        except AlertRuleError as exc:
            log.warning("stored alert channel %s left out: %s", name, exc)
    return rules, channels
