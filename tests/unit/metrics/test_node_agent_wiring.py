"""The node agent feeds its metrics: each pass publishes the cards its source just read;
``--metrics`` is opt-in and binds nothing without it."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from gres.device import DeviceSample
from plumbing.address import parse_address
from plumbing.metrics import serve
from slurm_plugins.node import SampleReader
from slurm_plugins.node.agent import Agent
from slurm_plugins.node.cli import agent
from slurm_plugins.node.metrics import NodeMetrics
from slurm_plugins.node.sources import NvmlSource
from tests.unit.metrics.scheme import check_scheme, values
from tests.unit.node.test_node_agent import FakeNvml, fake_proc


class CardsSource:
    """A source that read two GPUs, one of them busy with job 7."""

    def __init__(self) -> None:
        self.devices: tuple[DeviceSample, ...] = ()

    def sample(self) -> dict[int, float]:
        self.devices = (
            DeviceSample("gpu", 0, 80.0, 2048, 81920, 300.0, 70.0),
            DeviceSample("gpu", 1, 0.0, 0, 81920, 60.0, 35.0),
        )
        return {7: 80.0}


def test_a_pass_feeds_the_metrics_without_a_port(tmp_path: Path) -> None:
    metrics = NodeMetrics()
    run = Agent(CardsSource(), tmp_path, "gpu1", metrics=metrics, cluster="lab", clock=lambda: 5.0)
    assert list(metrics.registry.collect()) == []  # nothing sampled yet: nothing to show
    assert run.run_once() == 1
    assert set(SampleReader(tmp_path).read(now=5.0)) == {7}  # the samples are written as before
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_card_utilisation_ratio"], cluster="lab", node="gpu1") == {
        ("0", "gpu"): 0.8,
        ("1", "gpu"): 0.0,
    }
    assert values(fam["aipool_card_temperature_celsius"], card="0") == {("lab", "gpu", "gpu1"): 70}


def test_the_nvml_source_keeps_the_cards_it_read(tmp_path: Path) -> None:
    fake_proc(tmp_path, 5, {"SLURM_JOB_ID": "3", "CUDA_VISIBLE_DEVICES": "1"})
    src = NvmlSource(proc=tmp_path, nvml=FakeNvml())
    metrics = NodeMetrics()
    Agent(src, tmp_path / "out", "gpu1", metrics=metrics).run_once()
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_card_power_watts"]) == {("0", "default", "gpu", "gpu1"): 250.5}
    assert sorted(values(fam["aipool_card_utilisation_ratio"])) == [
        ("0", "default", "gpu", "gpu1"),
        ("1", "default", "gpu", "gpu1"),
    ]


def test_served_on_loopback(tmp_path: Path) -> None:
    metrics = NodeMetrics()
    server = serve(metrics.registry, parse_address("127.0.0.1:0"))
    assert server is not None
    try:
        Agent(CardsSource(), tmp_path, "gpu1", metrics=metrics, cluster="lab").run_once()
        url = f"http://{server.address}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
    finally:
        server.close()
    fam = {f.name: f for f in text_string_to_metric_families(text)}
    assert values(fam["aipool_card_memory_used_bytes"], card="0") == {
        ("lab", "gpu", "gpu1"): 2048 * 2**20
    }


def test_the_option_is_opt_in_and_checked(tmp_path: Path) -> None:
    files = tmp_path / "util"
    files.mkdir()
    argv = ["--source", f"file:{files}", "--out", str(tmp_path), "--node", "n1", "--once"]
    plain = CliRunner().invoke(agent, [*argv, "--no-health"])
    assert plain.exit_code == 0, plain.output
    assert "metrics" not in plain.output  # nothing bound
    served = CliRunner().invoke(agent, [*argv, "--no-health", "--metrics", "127.0.0.1:0"])
    assert served.exit_code == 0, served.output
    assert "metrics on http://127.0.0.1:" in served.output
    bad = CliRunner().invoke(agent, [*argv, "--metrics", "example.org:9102"])
    assert bad.exit_code == 2
    assert "--metrics: not an IP address: 'example.org'" in bad.output
