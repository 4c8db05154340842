"""Daemon configuration: the lab file loads; every mistake is reported with its path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from plumbing.errors import ConfigError
from plumbing.fields import parse_duration
from slurm_plugins.policy.config import LAB_CONFIG, load_config, parse_config


def test_lab_config_loads() -> None:
    cfg = load_config(LAB_CONFIG)
    assert cfg.interval_s == 10
    assert {t.name for t in cfg.tenants} == {"nlp", "vision", "cs101"}
    assert cfg.env == {"SLURM_CONF": "/tmp/aipool-lab/etc/slurm.conf"}
    fair = next(p for p in cfg.engine.policies if p.name == "fair")
    assert fair.args["half_life"] == 7 * 86400


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (90, 90.0),
        ("90s", 90.0),
        ("15m", 900.0),
        ("1h30m", 5400.0),
        ("7d", 604800.0),
        ("2.5h", 9000.0),
    ],
)
def test_durations(text: object, value: float) -> None:
    assert parse_duration(text) == value


@pytest.mark.parametrize("bad", ["7x", "h", "-5", True, None, "1h 30", -1])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"policies": [{"name": "nope"}]}, "policies[0].name: unknown policy 'nope'; known:"),
        (
            {"policies": [{"name": "fair", "args": {"half_life": "7x"}}]},
            "policies[0].args.half_life: not a duration: '7x'",
        ),
        (
            {"policies": [{"name": "fair", "args": {"halflife": 1}}]},
            "policies[0].args.halflife: Unknown field.",
        ),
        ({"policies": [{"name": "fifo"}], "intervall": 3}, "intervall: Unknown field."),
        ({"policies": []}, "policies: Shorter than minimum length 1."),
        ({"policies": [{"name": "fifo"}, {"name": "fifo"}]}, "policies: 'fifo' is listed twice"),
        (
            {"policies": [{"name": "fifo", "weight": -1}]},
            "policies[0].weight: Must be greater than or equal to 0.",
        ),
        (
            {
                "policies": [{"name": "fifo"}],
                "tenants": {"a": {"nominal": {"gpu": 1}, "lending_limit": {"gpu": 2}}},
            },
            "tenants.a.lending_limit.gpu: more than its nominal quota",
        ),
        (
            {"policies": [{"name": "fifo"}], "tenants": {"a": {"nominal": {"gpus": 1}}}},
            "tenants.a.nominal: unknown resource(s) ['gpus']",
        ),
        (
            {"policies": [{"name": "capacity", "args": {"reclaim": "sometimes"}}]},
            "policies[0].args.reclaim: Must be one of: any, lower_priority, never.",
        ),
        ([1, 2], "config: expected a mapping at the top level"),
    ],
)
def test_errors_name_their_path(doc: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert any(m.startswith(message) for m in err.value.messages), err.value.messages


def test_all_errors_at_once() -> None:
    doc = {"policies": [{"name": "nope"}, {"name": "fair", "args": {"half_life": "x"}}]}
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert len(err.value.messages) == 2


def test_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("policies: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="No such file"):
        load_config(tmp_path / "missing.yaml")


def test_round_trip_of_defaults(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({"policies": [{"name": "fifo"}]}))
    cfg = load_config(p)
    assert cfg.engine.site_factor_scale == 1_000_000
    assert cfg.engine.policies[0].args == {"window": 30 * 86400}
