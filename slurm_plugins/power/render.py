"""slurm.conf's power-saving lines and the three program scripts slurmctld runs, from one
configuration: the lab and the Ansible roles both render them here.

Slurm runs ``ResumeProgram`` and the others as a bare path with the hostlist as its one
argument, so each is a small script that execs ``aipool power <action>`` with the
configuration. Where slurmctld runs as root (the lab's ``SlurmUser=root``) the script first
drops to the service user: AIPool's programs never run as root.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from slurm_plugins.power.config import PowerConfig
from slurm_plugins.power.plan import suspend_exc_nodes

PROGRAMS = {
    "resume": "ResumeProgram",
    "suspend": "SuspendProgram",
    "resume-fail": "ResumeFailProgram",
}


def program_file(action: str) -> str:
    return f"power-{action}.sh"


def render_programs(
    config: Path,
    command: Sequence[str],
    *,
    run_as: str | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
) -> dict[str, str]:
    """File name -> script text for each program. ``command`` is how ``aipool`` is run (e.g.
    ``[/opt/aipool/runtime/bin/aipool]``); ``run_as`` the user to drop to when slurmctld runs
    as root; ``env`` what the program needs (it starts with an empty environment); ``log``
    where its output goes (slurmctld keeps none of it)."""
    keep = {"PATH": "/usr/local/bin:/usr/bin:/bin", **(env or {})}
    prefix: list[str] = []
    if run_as:
        prefix = ["setpriv", f"--reuid={run_as}", f"--regid={run_as}", "--init-groups", "--"]
    redirect = f" >>{shlex.quote(str(log))} 2>&1" if log else ""
    out = {}
    for action, key in PROGRAMS.items():
        argv = [*prefix, "env", "-i", *(f"{k}={v}" for k, v in sorted(keep.items()))]
        argv += [*command, "power", action, "--config", str(config)]
        out[program_file(action)] = (
            "#!/bin/sh\n"
            f"# {key} of slurm.conf, rendered by AIPool: run by slurmctld with a\n"
            "# hostlist; AIPool's program runs as SlurmUser or the service user, never root.\n"
            f'exec {shlex.join(argv)} "$@"{redirect}\n'
        )
    return out


def render_power_lines(
    cfg: PowerConfig,
    programs_dir: Path,
    partitions: Mapping[str, Sequence[str]],
    all_nodes: Sequence[str],
    *,
    debug: bool = False,
) -> str:
    """The slurm.conf lines that turn power saving on for ``cfg.nodes`` (the node lines
    themselves carry ``State=CLOUD``: they start powered down and Slurm does not wait for
    them at start-up)."""
    lines = [
        f"SuspendProgram={programs_dir / program_file('suspend')}",
        f"ResumeProgram={programs_dir / program_file('resume')}",
        f"ResumeFailProgram={programs_dir / program_file('resume-fail')}",
        f"SuspendTime={cfg.suspend_time_s}",
        f"SuspendTimeout={cfg.suspend_timeout_s}",
        f"ResumeTimeout={cfg.resume_timeout_s}",
        f"ResumeRate={cfg.resume_rate}",
        f"SuspendRate={cfg.suspend_rate}",
    ]
    if exc := suspend_exc_nodes(cfg, partitions, all_nodes):
        lines.append(f"SuspendExcNodes={exc}")
    if debug:
        lines.append("DebugFlags=Power")
    return "\n".join(lines) + "\n"
