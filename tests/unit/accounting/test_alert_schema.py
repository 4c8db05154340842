"""Alert rules and channels that do not validate: each error names its field and says why, in
the file and the API alike; a rule naming a missing channel is refused; the file's rules and
channels load with the keys that came before rules."""

from __future__ import annotations

from typing import Any

import pytest

from accounting.alert_delivery import DeliverySettings
from accounting.alert_rules import (
    AlertRuleError,
    check_references,
    lines,
    load_channel,
    load_rule,
)
from accounting.alerts import AlertConfigError, load_config
from tests.unit.accounting.test_alert_rules import _doc


@pytest.mark.parametrize(
    ("patch", "field", "words"),
    [
        ({"comparator": "=>"}, "comparator", "Must be one of"),
        ({"channels": []}, "channels", "at least one channel"),
        ({"for": "10x"}, "for", "duration such as"),
        ({"for": "90d"}, "for", "30 days at most"),
        ({"threshold": "many"}, "threshold", "valid number"),
        ({"query": {"kind": "usage"}}, "query.measure", "needs its measure"),
        ({"query": {"kind": "metric"}}, "query.promql", "needs its PromQL"),
        (
            {"query": {"kind": "usage", "measure": "card_hours_share"}, "scope": {"level": "user"}},
            "query.budget",
            "needs a budget",
        ),
        ({"scope": {"level": "project", "name": "nlp"}}, "scope", "Pools belong to the platform"),
        ({"scope": {"level": "platform", "name": "x"}}, "scope.name", "names no tenant"),
        ({"name": "9lives"}, "name", "starts with a letter"),
        ({"colour": "red"}, "colour", "Unknown field"),
    ],
)
def test_bad_rules_say_which_field_and_why(patch: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(AlertRuleError) as exc:
        load_rule({**_doc(), **patch})
    found = lines(exc.value.errors)
    assert any(line.startswith(f"{field}: ") and words in line for line in found), found


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        ({"type": "wecom"}, "url", "needs its URL"),
        ({"type": "wecom", "url": "ftp://x.example/"}, "url", "Not a valid URL"),
        ({"type": "wecom", "url": "http://x.example/", "secret": "s"}, "secret", "sign"),
        ({"type": "email"}, "recipients", "recipients or roles"),
        ({"type": "email", "roles": ["boss"]}, "roles.0", "Must be one of"),
        ({"type": "sms", "url": "http://x.example/"}, "type", "Must be one of"),
    ],
)
def test_bad_channels_say_which_field_and_why(doc: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(AlertRuleError) as exc:
        load_channel({"name": "c", **doc})
    found = lines(exc.value.errors)
    assert any(line.startswith(f"{field}: ") and words in line for line in found), found


def test_a_rule_naming_a_missing_channel_is_refused() -> None:
    with pytest.raises(AlertRuleError, match="no channel named nowhere"):
        check_references([load_rule({**_doc(), "channels": ["nowhere"]})], [])
    with pytest.raises(AlertConfigError, match=r"rules\.0\.comparator"):
        load_config({"rules": [{**_doc(), "comparator": "≈"}], "channels": []})
    with pytest.raises(AlertConfigError, match="no channel named hook"):
        load_config({"rules": [_doc()]})


def test_rules_and_channels_load_from_the_file_with_the_old_keys() -> None:
    cfg = load_config(
        {
            "platform_admins": ["ops@example.org"],
            "prometheus": {"url": "http://127.0.0.1:9090"},
            "delivery": {"attempts": 5, "backoff_s": 1},
            "channels": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:1/h"}],
            "rules": [_doc()],
        }
    )
    assert [r.name for r in cfg.rules] == ["pool-full", "pool_exhausted:GPU", "pool_exhausted:NPU"]
    assert [c.name for c in cfg.channels] == ["hook", "mail:platform_admins"]
    assert cfg.prometheus_url == "http://127.0.0.1:9090"
    assert cfg.delivery == DeliverySettings(attempts=5, backoff_s=1.0)
