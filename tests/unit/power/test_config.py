"""The elastic nodes' configuration: defaults, every driver's required keys, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from plumbing.errors import ConfigError
from slurm_plugins.power.config import DriverKind, PartitionLimits, load_config, parse_config

from .conftest import power_config


def test_defaults_and_hostlist() -> None:
    cfg = power_config()
    assert cfg.nodes == ("egpu1", "egpu2", "egpu3", "enpu1")
    assert cfg.driver.kind is DriverKind.COMMAND
    assert cfg.partitions == {"gpu": PartitionLimits(1, 2)}
    assert (cfg.suspend_time_s, cfg.resume_timeout_s) == (600, 600)
    assert cfg.watts("egpu1") == 500
    assert cfg.watts("egpu2") == 200


def test_durations_accept_units() -> None:
    cfg = power_config(suspend_time="2m", resume_timeout="1m30s")
    assert (cfg.suspend_time_s, cfg.resume_timeout_s) == (120, 90)


@pytest.mark.parametrize(
    ("driver", "missing"),
    [
        ({"kind": "command", "resume": ["x"]}, "suspend"),
        ({"kind": "ipmi", "user": "admin"}, "password_file"),
        ({"kind": "cloud", "url": "http://127.0.0.1:1/api"}, "token_file"),
        ({"kind": "lab"}, "helper"),
    ],
)
def test_each_driver_names_what_it_lacks(driver: dict[str, object], missing: str) -> None:
    with pytest.raises(ConfigError) as err:
        power_config(driver=driver)
    assert any(f"driver.{missing}: required by the" in m for m in err.value.messages)


def test_bad_input_lists_every_problem() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(
            {
                "nodes": "gpu[1-",
                "driver": {"kind": "teleport"},
                "partitions": {"gpu": {"floor": 3, "ceiling": 1}},
                "surprise": 1,
            }
        )
    text = "\n".join(err.value.messages)
    assert "power.nodes:" in text
    assert "power.driver.kind:" in text
    assert "floor is above ceiling" in text
    assert "power.surprise: Unknown field." in text


def test_load_config_reports_the_file(tmp_path: Path) -> None:
    path = tmp_path / "power.yaml"
    path.write_text("nodes: [oops\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.messages[0].startswith(f"{path}: not valid YAML")
    with pytest.raises(ConfigError, match="No such file"):
        load_config(tmp_path / "absent.yaml")
