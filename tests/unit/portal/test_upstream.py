"""Where the portal's proxies may connect (portal.upstream): a port of the range only, the
address Slurm has for the job's one node only, whatever the job's files say."""

from __future__ import annotations

import pytest

from aipool.lab.config import LabPorts
from portal.upstream import DEFAULT_PORT_RANGE, PortRange, node_address, port_range, upstream
from slurm_plugins.client.models import Job, JobState, Node, NodeState

NODES = (
    Node("gpu1", NodeState.MIXED, address="10.0.0.11"),
    Node("gpu2", NodeState.MIXED),  # no NodeAddr: its name
    Node("v6", NodeState.MIXED, address="fd00::7"),
)
RANGE = PortRange(50000, 59999)


def job(nodes: str, count: int = 1) -> Job:
    return Job(1, "nb", "bob", "nlp", "gpu", "normal", JobState.RUNNING, nodes=nodes,
               node_count=count)  # fmt: skip


@pytest.mark.parametrize(
    ("value", "expected"),
    [("50000-59999", (50000, 59999)), (" 40000 - 40010 ", (40000, 40010)),
     ([41000, 41001], (41000, 41001)), ((1024, 65535), (1024, 65535))],
)  # fmt: skip
def test_a_range_is_read_from_a_string_or_a_pair(value: object, expected: tuple[int, int]) -> None:
    parsed = port_range(value)
    assert (parsed.low, parsed.high) == expected


@pytest.mark.parametrize(
    "value", ["50000", "59999-50000", "0-100", "22-8080", "50000-70000", [1], "a-b", None, 5]
)
def test_a_range_that_is_not_one_of_unprivileged_ports_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match=r"PROXY_PORT_RANGE|port range|invalid literal"):
        port_range(value)


@pytest.mark.parametrize("port", [50000, 54321, 59999])
def test_ports_inside_the_range_pass(port: int) -> None:
    assert port in RANGE


@pytest.mark.parametrize("port", [49999, 60000, 22, 3306, 6820, 8080, 0, -1, 65536, True,
                                  "50001", 50001.0, None])  # fmt: skip
def test_ports_outside_the_range_or_not_ports_do_not(port: object) -> None:
    assert port not in RANGE


@pytest.mark.parametrize("offset", [0, 100, 300, 500, 1000, 2000, 3000, 5000, 10000, 20000])
def test_the_default_range_holds_no_port_of_the_lab_at_its_offsets(offset: int) -> None:
    """The lab's services (and 64 slurmds) stay outside the default range at every offset
    the tests and the docs use; so do ssh, MariaDB and jobs' rendezvous blocks."""
    default = PortRange(*DEFAULT_PORT_RANGE)
    ports = LabPorts().shifted(offset)
    used = [getattr(ports, f) for f in ports.__dataclass_fields__]
    used += [ports.slurmd_base + i for i in range(64)]
    used += [ports.agent_metrics_base + i for i in range(64)]
    used += [22, 3306, 6817, 6818, 6819, 6820, 8080, 9090, *range(20000, 20000 + 150 * 64)]
    assert [p for p in used if p in default] == []


def test_the_node_address_is_slurms_nodeaddr_else_its_name() -> None:
    assert node_address(job("gpu1"), NODES) == "10.0.0.11"
    assert node_address(job("gpu2"), NODES) == "gpu2"


@pytest.mark.parametrize("nodes", ["", "gpu9", "gpu[1-2]", "gpu1,gpu2", "GPU1", "gpu1 "])
def test_no_single_known_node_no_address(nodes: str) -> None:
    assert node_address(job(nodes), NODES) is None


def test_a_job_on_several_nodes_has_no_server_address() -> None:
    assert node_address(job("gpu1", count=2), NODES) is None


def test_the_upstream_takes_the_port_only_in_range_and_the_host_from_slurm() -> None:
    assert upstream(job("gpu1"), NODES, 50001, RANGE) == "http://10.0.0.11:50001"
    assert upstream(job("v6"), NODES, 50001, RANGE) == "http://[fd00::7]:50001"
    assert upstream(job("gpu1"), NODES, 6820, RANGE) is None
    assert upstream(job("gpu9"), NODES, 50001, RANGE) is None
