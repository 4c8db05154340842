"""Per-submission overhead of the admission hook, against the same sbatch calls without it.

Alternating rounds on the running lab, each timing the same plain ``sbatch`` submissions of
held jobs (submitted for a demo user with ``--uid``, so every check runs):

* ``full``  the lab policy table: defaults, tags and every check;
* ``pass``  a pass-through table: the same hook and table load, no checks (the baseline);
* ``off``   (``--plugin-off``) no job_submit plugin at all: slurm.conf without
  ``JobSubmitPlugins`` and ``scontrol reconfigure``. A reconfigure resets runtime changes of
  everyone using the lab (node weights, partition states), so use it on a lab of your own
  (``AIPOOL_LAB_DIR``, ``AIPOOL_LAB_PORT_OFFSET``), never on a shared one.

Modes rotate inside each round (ABC, BCA, CAB, …) so drift and warm-up hit all alike; each
switch is confirmed by a probe submission before the clock starts. The lab policy and
slurm.conf are restored at the end, and only the jobs this script submitted are cancelled.

A difference of a tenth of a millisecond drowns in the noise of a few milliseconds per
sbatch on a busy host, so it also measures the hook directly: inside slurmctld (a table
rendered with ``profile`` makes the hook log its mean time), and offline under lua5.1.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aipool.lab.cluster import Lab
from aipool.lab.config import DEFAULT_ROOT
from slurm_plugins.admission import TABLE_FILE, load_policy, render_hook, write_files
from slurm_plugins.admission.config import LAB_POLICY
from slurm_plugins.admission.table import lua_string
from slurm_plugins.client import SlurmClient

PLUGIN_LINE = "JobSubmitPlugins=lua"
HOOK_TIME = re.compile(r"aipool: hook time over (\d+) submissions: mean ([0-9.]+) us")
#: A request that takes the hook through every check (routing, shards, limits, tag).
REQUEST = ["--gres=shard:8", "--comment=aipool:anti_affinity=bench"]


class Bench:
    def __init__(self, lab: Lab, user: str) -> None:
        self.lab, self.user = lab, user
        self.env = {**os.environ, **lab.cfg.env()}
        self.client = SlurmClient(env=lab.cfg.env())
        self.ids: list[int] = []
        self.policy = load_policy(LAB_POLICY)
        self.conf = lab.cfg.slurm_conf
        self.conf_text = self.conf.read_text()

    def sbatch(self, *extra: str, check: bool = True) -> int | None:
        """One plain sbatch of a held job; returns its id (None when refused)."""
        argv = ["sbatch", "--parsable", "-H", f"--uid={self.user}", *REQUEST, *extra]
        argv += [f"--chdir={self.lab.cfg.jobs}", "--output=/dev/null", "--wrap=true"]
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, check=False)
        if done.returncode != 0:
            if check:
                raise SystemExit(f"sbatch failed: {done.stderr.strip()}")
            return None
        job_id = int(done.stdout.strip().split(";")[0])
        self.ids.append(job_id)
        return job_id

    def switch(self, mode: str) -> None:
        plugin_on = mode != "off"
        if (PLUGIN_LINE in self.conf.read_text().splitlines()) != plugin_on:
            lines = self.conf_text.splitlines(keepends=True)
            if not plugin_on:
                lines = [ln for ln in lines if ln.strip() != PLUGIN_LINE]
            self.conf.write_text("".join(lines))
            self.client.reconfigure()
        if plugin_on:
            files = render_hook(self.policy, pass_through=mode == "pass")
            write_files({TABLE_FILE: files[TABLE_FILE]}, self.lab.cfg.etc)
        self.wait_for(mode)

    def wait_for(self, mode: str, timeout: float = 10) -> None:
        """Probe until the controller behaves as ``mode``: full refuses shard:6, others tag
        nothing (pass) or have no plugin (off; indistinguishable from pass by a probe)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            probe = self.sbatch("--gres=shard:6", check=False)
            if (probe is None) == (mode == "full"):
                return
            time.sleep(0.2)
        raise SystemExit(f"the controller did not switch to {mode!r} within {timeout:g} s")

    def timed(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.sbatch()
            out.append(time.perf_counter() - t0)
        return out

    def controller_time(self, n: int, every: int = 50) -> tuple[float, int]:
        """The hook's own time inside slurmctld: a table rendered with ``profile`` makes the
        hook log its mean time every ``every`` submissions; returns (mean us, submissions)."""
        log = self.lab.cfg.log / "slurmctld.log"
        offset = log.stat().st_size
        files = render_hook(self.policy, profile=every)
        write_files({TABLE_FILE: files[TABLE_FILE]}, self.lab.cfg.etc)
        self.wait_for("full")
        self.timed(n)
        self.cancel()
        with log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        windows = [(int(k), float(us)) for k, us in HOOK_TIME.findall(text)]
        count = sum(k for k, _ in windows)
        if not count:
            raise SystemExit(f"no hook timing in {log}: is lua-posix installed for slurmctld?")
        return sum(k * us for k, us in windows) / count, count

    def cancel(self) -> None:
        ids, self.ids = self.ids, []
        for i in range(0, len(ids), 500):
            self.client.cancel(ids[i : i + 500])

    def restore(self) -> None:
        if self.conf.read_text() != self.conf_text:
            self.conf.write_text(self.conf_text)
            self.client.reconfigure()
        write_files(render_hook(self.policy), self.lab.cfg.etc)
        self.cancel()


def lua_cpu(calls: int) -> dict[str, float]:
    """Microseconds per hook call under lua5.1, fake slurm, same request as the lab bench."""
    lua = shutil.which("lua5.1")
    if lua is None:
        return {}
    out: dict[str, float] = {}
    for mode in ("full", "pass"):
        with tempfile.TemporaryDirectory() as tmp:
            write_files(
                render_hook(load_policy(LAB_POLICY), pass_through=mode == "pass"), Path(tmp)
            )
            driver = Path(tmp) / "driver.lua"
            driver.write_text(_DRIVER.replace("HOOK", lua_string(f"{tmp}/job_submit.lua")))
            done = subprocess.run(
                [lua, str(driver), str(calls)], capture_output=True, text=True, check=True
            )
            out[mode] = float(done.stdout.strip()) * 1e6
    return out


_DRIVER = """
slurm = { SUCCESS = 0, ERROR = -1, log_user = function() end,
  log_info = function() end, log_error = function() end }
dofile(HOOK)
local n = tonumber(arg[1])
local fields = { user_name = "carol", user_id = 1003, default_account = "cs101",
  time_limit = 4294967294,
  min_nodes = 4294967294, num_tasks = 4294967294, tres_per_node = "gres:shard:8",
  comment = "aipool:anti_affinity=bench" }
local t0 = os.clock()
for _ = 1, n do
  local job = setmetatable({}, { __index = fields, __newindex = function() end })
  assert(slurm_job_submit(job, {}, 1003) == 0)
end
print((os.clock() - t0) / n)
"""


def quantile(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[round(q * 20) - 1]


def paired(
    a: list[list[float]], b: list[list[float]], stat: Callable[[list[float]], float]
) -> tuple[float, float, float]:
    """Median over rounds of stat(a_r) / stat(b_r), with a 95 % bootstrap interval over
    rounds: rounds next to each other in time share the machine's load, so pairing them
    cancels most of the drift."""
    ratios = [stat(x) / stat(y) for x, y in zip(a, b, strict=True)]
    rng = random.Random(0)  # noqa: S311 - resampling, not secrets
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(1000))
    return statistics.median(ratios), boot[25], boot[974]


def describe(name: str, rounds: list[list[float]]) -> str:
    flat = [t for r in rounds for t in r]
    return (
        f"{name:<5} n={len(flat):<5} p20 {quantile(flat, 0.2) * 1e3:6.2f} ms"
        f"  median {statistics.median(flat) * 1e3:6.2f} ms"
        f"  mean {statistics.fmean(flat) * 1e3:6.2f} ms"
    )


def compare(name: str, a: list[list[float]], b: list[list[float]]) -> str:
    out = []
    for label, stat in (("median", statistics.median), ("p20", lambda x: quantile(x, 0.2))):
        mid, lo, hi = paired(a, b, stat)
        out.append(f"{label} {mid:.3f} (95% CI {lo:.3f}-{hi:.3f})")
    return f"{name:<9} " + "   ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jobs", type=int, default=25, help="submissions per mode per round")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--user", default="carol", help="demo user the jobs are submitted for")
    ap.add_argument("--plugin-off", action="store_true", help="also time with no plugin")
    ap.add_argument("--lua-calls", type=int, default=200_000)
    ap.add_argument("--profile-jobs", type=int, default=500, help="submissions timed in slurmctld")
    args = ap.parse_args()
    lab = Lab()
    if not lab.is_up():
        raise SystemExit("the lab is not up: run `aipool lab up` first")
    if args.plugin_off and lab.cfg.root == DEFAULT_ROOT:
        raise SystemExit(
            f"--plugin-off reconfigures slurmctld: not on the shared lab at {DEFAULT_ROOT}; "
            "start one of your own with AIPOOL_LAB_DIR and AIPOOL_LAB_PORT_OFFSET"
        )
    bench = Bench(lab, args.user)
    modes = ["full", "pass", *(["off"] if args.plugin_off else [])]
    times: dict[str, list[list[float]]] = {m: [] for m in modes}
    print(f"lab {lab.cfg.root}: {args.rounds} rounds x {args.jobs} sbatch per mode, as {args.user}")
    try:
        inside, counted = bench.controller_time(args.profile_jobs)
        for r in range(args.rounds):
            order = modes[r % len(modes) :] + modes[: r % len(modes)]
            for mode in order:
                bench.switch(mode)
                times[mode].append(bench.timed(args.jobs))
            bench.cancel()
            medians = "  ".join(f"{m} {statistics.median(times[m][-1]) * 1e3:.2f}" for m in modes)
            print(f"  round {r + 1:>2}: median ms  {medians}")
    finally:
        bench.restore()
    print("time per plain sbatch, client side (fork, munge, RPC, hook):")
    for mode in modes:
        print("  " + describe(mode, times[mode]))
    print(f"ratios paired by round, over {args.rounds} rounds (1.000 = no overhead):")
    print("  " + compare("full/pass", times["full"], times["pass"]))
    if "off" in times:
        print("  " + compare("pass/off", times["pass"], times["off"]))
        print("  " + compare("full/off", times["full"], times["off"]))
    sbatch = statistics.median([t for r in times["pass"] for t in r])
    print(
        f"hook time inside slurmctld (profiled, {counted} submissions): {inside:.0f} us"
        f" = {inside / 1e6 / sbatch * 100:.2f} % of a median plain sbatch ({sbatch * 1e3:.2f} ms)"
    )
    cpu = lua_cpu(args.lua_calls)
    if cpu:
        print(
            f"hook CPU per call, offline lua5.1 ({args.lua_calls} calls): "
            f"full {cpu['full']:.1f} us, pass {cpu['pass']:.2f} us"
        )


if __name__ == "__main__":
    main()
