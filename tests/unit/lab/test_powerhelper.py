"""The lab's starter of elastic nodes' slurmd: only start|stop of the nodes its root-owned
configuration lists, with the argv written there; the refuse file; exactly its own process."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from aipool.lab import powerhelper


@pytest.fixture
def starter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # a stand-in for `slurmd -D -N egpu1`: its command line names slurmd and the node
    stand_in = [sys.executable, "-c", "import time; time.sleep(60)", "slurmd", "-N", "egpu1"]
    conf = {
        "nodes": {"egpu1": stand_in},
        "run": str(tmp_path / "run"),
        "log": str(tmp_path),
        "refuse": str(tmp_path / "refuse"),
        "env": {"PATH": "/usr/bin:/bin"},
    }
    path = tmp_path / "aipool-lab-power.json"
    path.write_text(json.dumps(conf))
    path.chmod(0o644)
    monkeypatch.setattr(powerhelper, "config_path", lambda: path)
    return tmp_path


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_start_stop_and_only_once(starter: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert powerhelper.main(["start", "egpu1"]) == 0
    pid = int((starter / "run" / "egpu1.pid").read_text())
    conf = json.loads((starter / "aipool-lab-power.json").read_text())
    deadline = time.monotonic() + 5  # the child's command line is there once its exec is done
    while powerhelper.running(conf, "egpu1") != pid and time.monotonic() < deadline:
        time.sleep(0.01)
    assert powerhelper.running(conf, "egpu1") == pid
    assert powerhelper.main(["start", "egpu1"]) == 0
    assert f"runs already (pid {pid})" in capsys.readouterr().out
    assert powerhelper.main(["stop", "egpu1"]) == 0
    assert not (starter / "run" / "egpu1.pid").exists()
    assert (
        not Path(f"/proc/{pid}/cmdline").exists()
        or b"slurmd" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    )
    assert powerhelper.main(["stop", "egpu1"]) == 0
    assert "is not running" in capsys.readouterr().out


def test_refusals(starter: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (starter / "refuse").write_text("egpu1\n")
    assert powerhelper.main(["start", "egpu1"]) == 1
    assert "egpu1 does not power on" in capsys.readouterr().err
    assert powerhelper.main(["start", "gpu1"]) == 1
    assert "gpu1 is not a power-saved node" in capsys.readouterr().err
    assert powerhelper.main(["reboot", "egpu1"]) == 2
    assert powerhelper.main(["start"]) == 2
    (starter / "aipool-lab-power.json").chmod(0o666)
    assert powerhelper.main(["stop", "egpu1"]) == 1
    assert "only root may write" in capsys.readouterr().err
