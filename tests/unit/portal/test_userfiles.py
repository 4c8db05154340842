"""The portal reads users' files without following links, owner-checked and tail-capped; a
job's page shows its output and progress to its owner and platform admins only."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from portal.userfiles import read_tail
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login

ME = getpass.getuser()


def test_a_link_another_owner_or_a_directory_is_not_read(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    out.write_text("line 1\nprogress: 40%\n")
    assert read_tail(out, ME) == "line 1\nprogress: 40%\n"
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    link = tmp_path / "swapped.out"
    link.symlink_to(secret)
    assert read_tail(link, ME) is None  # a job's .out swapped for a link: refused
    assert read_tail(tmp_path, ME) is None
    assert read_tail(tmp_path / "missing.out", ME) is None
    assert read_tail(out, "no-such-user-here") is None
    if os.geteuid() == 0:
        os.chown(out, 65534, 65534)  # nobody's now: not the job's user's file
        assert read_tail(out, ME) is None


def test_a_link_anywhere_on_the_way_is_not_followed(tmp_path: Path) -> None:
    """The job's user swaps a directory on the path for a link to another place holding a
    file of the same name: the portal does not follow it, even where the file is theirs."""
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "job.out").write_text("planted\n")
    run = tmp_path / "run"
    run.symlink_to(real, target_is_directory=True)
    assert (run / "job.out").read_text() == "planted\n"  # the kernel would follow it
    assert read_tail(run / "job.out", ME) is None
    assert read_tail(real / "job.out", ME) == "planted\n"
    assert read_tail("relative/job.out", ME) is None
    assert read_tail(tmp_path / "x" / ".." / "run" / "job.out", ME) is None


def test_only_the_tail_is_read(tmp_path: Path) -> None:
    out = tmp_path / "big.out"
    out.write_bytes(b"x" * 100_000 + b"\nthe end\n")
    tail = read_tail(out, ME, max_bytes=1024)
    assert tail is not None
    assert len(tail) == 1024
    assert tail.endswith("the end\n")


def test_the_job_page_shows_output_and_progress_to_whom_it_may(env: Env, tmp_path: Path) -> None:
    out = tmp_path / "train.out"
    out.write_text("epoch 1\nprogress: 25%\nepoch 2\nprogress: 50%\n")
    job = env.slurm.add_job(ME, "nlp", stdout_path=str(out))
    page = login(env, "admin").get(f"/jobs/{job}").get_data(as_text=True)
    assert 'id="log"' in page
    assert "epoch 2" in page
    assert 'value="50.0"' in page
    assert 'id="log"' not in login(env, "erin").get(f"/jobs/{job}").get_data(as_text=True)


def test_an_evaluation_log_swapped_for_a_link_is_not_read(tmp_path: Path) -> None:
    """A member swaps a finished evaluation's .out for a link to a root-only file: the
    failure message the portal shows comes from nowhere but the job's own file."""
    from portal.registry.workdirs import log_tail

    secret = tmp_path / "jwt_hs256.key"
    secret.write_text("the slurmrestd key\n")
    work = tmp_path / "eval"
    work.mkdir()
    (work / "slurm-7.out").symlink_to(secret)
    assert log_tail(work, ME) == ""
    (work / "slurm-7.out").unlink()
    (work / "slurm-7.out").write_text("Traceback: out of memory\n")
    assert log_tail(work, ME) == "Traceback: out of memory\n"
