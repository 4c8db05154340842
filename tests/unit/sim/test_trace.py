"""Loading node and task lists in the trace's CSV format, and the errors it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from gres.placement import Request
from sim.trace import NodeSpec, Task, TraceError, load_nodes, load_tasks

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
TASK_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "list.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_loads_the_test_trace(nodes: list[NodeSpec], tasks: list[Task]) -> None:
    assert [n.name for n in nodes] == ["node-a", "node-b", "node-c", "node-d", "node-e"]
    assert sum(n.gpu_count for n in nodes) == 17
    assert len(tasks) == 40
    assert tasks[0].request == Request(3000, 6144, 300, 1, ("T4",))
    assert (tasks[0].qos, tasks[0].creation, tasks[0].deletion) == ("Burstable", 48, 1765)


def test_five_column_task_lists_have_no_times(tmp_path: Path) -> None:
    task = load_tasks(write(tmp_path, TASK_HEADER + "p,1000,10,2,1000\n"))[0]
    assert task.request == Request(1000, 10, 1000, 2)
    assert (task.creation, task.deletion, task.qos) == (None, None, "")


def test_gpu_milli_above_one_card_is_a_whole_card(tmp_path: Path) -> None:
    task = load_tasks(write(tmp_path, TASK_HEADER + "p,1000,10,1,1500\n"))[0]
    assert task.request.gpu_milli == 1000


@pytest.mark.parametrize(
    ("loader", "text", "message"),
    [
        (load_nodes, "sn,cpu_milli,gpu\n", "missing column(s) memory_mib, model"),
        (load_nodes, NODE_HEADER + "n1,x,1,1,A\n", "list.csv:2: cpu_milli must be a whole number"),
        (load_nodes, NODE_HEADER + "n1,1,1,-2,A\n", "gpu must not be negative"),
        (load_nodes, NODE_HEADER + "n1,1,1,2,\n", "has 2 GPUs but no model"),
        (load_nodes, NODE_HEADER + "n1,1,1,0,\nn1,1,1,0,\n", "listed twice"),
        (load_nodes, NODE_HEADER, "no nodes"),
        (load_tasks, TASK_HEADER + "p,1,1,2,500\n", "cannot span 2 cards"),
        (load_tasks, TASK_HEADER + "p,1,1,1,0\n", "GPUs of 0 milli"),
        (load_tasks, TASK_HEADER + ",1,1,0,0\n", "empty task name"),
        (load_tasks, TASK_HEADER + "p,1,1,0,0,9\n", "more fields than the header"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, loader: object, text: str, message: str) -> None:
    assert callable(loader)
    with pytest.raises(TraceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        loader(write(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read"):
        load_nodes(tmp_path / "absent.csv")
