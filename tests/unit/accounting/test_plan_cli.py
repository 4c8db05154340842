"""``aipool accounting plan`` and ``account``: apply, show, list, open, set; bad input is
exit 2 with the field's path and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner, Result
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from accounting.cli import accounting
from accounting.plans import accounts_by_plan, normalise, plan_document, plan_names
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner
from tests.unit.accounting.test_plans import DOC
from tests.unit.accounting.test_slurm_paths import ok, recorded


def run(
    engine: Engine, *args: str, stdin: str | None = None, slurm: SlurmClient | None = None
) -> Result:
    """The command, with Slurm answering from recorded 22.05 output (its accounts are the
    tenants: nlp, vision, cs101, research, teaching, …)."""
    url = engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(
        accounting,
        [*args[:2], "--db", url, *args[2:]],
        input=stdin,
        obj=slurm or recorded()[0],
    )


def stored(engine: Engine, name: str = "standard") -> dict[str, object]:
    with Session(engine) as s:
        return plan_document(s, name)


def test_apply_show_list_open_and_set(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "standard.yaml"
    path.write_text(yaml.safe_dump(DOC))
    res = run(engine, "plan", "apply", str(path))
    assert res.exit_code == 0, res.output
    assert "plan standard applied: 5 rates, 1 packages" in res.output
    res = run(engine, "plan", "show", "standard")
    assert res.exit_code == 0, res.output
    assert yaml.safe_load(res.output) == normalise(DOC)
    assert 'rate: "12.00"' in res.output or "rate: '12.00'" in res.output  # strings, not floats
    res = run(engine, "plan", "show", "standard", "--format", "json")
    assert json.loads(res.output) == normalise(DOC)
    # the exported document applies again from standard input
    edited = res.output.replace('"12.00"', '"13.00"')
    res = run(engine, "plan", "apply", "-", stdin=edited)
    assert res.exit_code == 0, res.output
    assert stored(engine)["prices"][0]["rate"] == "13.00"  # type: ignore[index]
    res = run(engine, "account", "open", "nlp", "--plan", "standard", "--package", "lab-100")
    assert res.exit_code == 0, res.output
    assert res.output == "nlp: plan standard, package lab-100, balance 0.00\n"
    res = run(engine, "account", "set", "nlp", "--no-package")
    assert res.output == "nlp: plan standard, package none, balance 0.00\n"
    res = run(engine, "plan", "list")
    assert res.exit_code == 0, res.output
    assert res.output == (
        "standard (CNY): gpu:a100 13.00, gpu 8.00, npu:910b 9.00, cpu 0.05, mem 0.01; "
        "packages: lab-100; accounts: nlp\n"
    )


def test_bad_documents_exit_2_with_the_path(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: standard\nprices:\n  - {resource: gpu, rate: 8.5}\n  - {resource: x}\n")
    res = run(engine, "plan", "apply", str(path))
    assert res.exit_code == 2
    assert "prices[0].rate: Must be a decimal string" in res.output
    assert "prices[1].resource: Must be one of" in res.output
    assert "prices[1].rate: Missing data" in res.output
    with Session(engine) as s:
        assert plan_names(s) == []
    path.write_text("name: [\n")
    assert run(engine, "plan", "apply", str(path)).exit_code == 2
    res = run(engine, "plan", "apply", str(tmp_path / "missing.yaml"))
    assert res.exit_code == 2
    res = run(engine, "plan", "show", "gold")
    assert res.exit_code == 2
    assert "no price plan named 'gold'" in res.output


def test_account_errors_exit_2(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "standard.yaml"
    path.write_text(json.dumps(DOC))
    assert run(engine, "plan", "apply", str(path)).exit_code == 0
    cases = [
        (["account", "open", "ghost", "--plan", "standard"], "tenant: There is no domain"),
        (["account", "open", "nlp", "--plan", "gold"], "plan: There is no price plan named gold"),
        (["account", "open", "nlp", "--plan", "standard", "--package", "x"], "package: The plan"),
        (["account", "open", "nlp"], "Missing option '--plan'"),
        (["account", "set", "nlp", "--plan", "standard"], "'nlp' has no billing account"),
        (["account", "set", "nlp"], "nothing to change"),
        (["account", "set", "nlp", "--package", "a", "--no-package"], "not both"),
    ]
    for args, message in cases:
        res = run(engine, *args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output, (args, res.output)
    assert run(engine, "account", "open", "nlp", "--plan", "standard").exit_code == 0
    res = run(engine, "account", "open", "nlp", "--plan", "standard")
    assert res.exit_code == 2
    assert "already has a billing account" in res.output
    # removing a package an account uses: refused, the plan unchanged
    assert run(engine, "account", "set", "nlp", "--package", "lab-100").exit_code == 0
    path.write_text(json.dumps({**DOC, "packages": []}))
    res = run(engine, "plan", "apply", str(path))
    assert res.exit_code == 2
    assert "packages: The package lab-100 is still used by nlp" in res.output
    assert stored(engine) == normalise(DOC)


def test_tenants_are_slurm_accounts(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "standard.yaml"
    path.write_text(json.dumps(DOC))
    assert run(engine, "plan", "apply", str(path)).exit_code == 0
    client, runner = recorded()
    res = run(engine, "account", "open", "vision", "--plan", "standard", slurm=client)
    assert res.exit_code == 0, res.output
    assert [argv[0] for argv, _ in runner.calls if argv[0] == "sacctmgr"] == ["sacctmgr"]
    # Slurm not answering: a clear error, nothing opened
    down = SlurmClient(
        ReplayRunner(  # type: ignore[arg-type]
            {
                ("sinfo", "--version"): ok("version.txt"),
                ("sacctmgr",): Completed((), 1, "", "sacctmgr: error: connection refused"),
            }
        )
    )
    res = run(engine, "account", "open", "nlp", "--plan", "standard", slurm=down)
    assert res.exit_code == 1
    assert "cannot check 'nlp' against Slurm's accounts" in res.output
    with Session(engine) as s:
        assert accounts_by_plan(s) == {"standard": ["vision"]}


def test_lab_settings_come_from_the_aipool_command(engine: Engine) -> None:
    url = engine.url.render_as_string(hide_password=False)
    res = CliRunner().invoke(
        accounting, ["account", "open", "nlp", "--plan", "standard", "--db", url, "--lab"]
    )
    assert res.exit_code == 2
    assert "--lab works through the aipool command" in res.output
