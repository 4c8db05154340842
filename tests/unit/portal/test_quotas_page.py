"""The quotas page: one table per kind of tenant with one header row (units in words), each
input named for screen readers; the admission policy as a table of what the hook enforces,
the Lua below for experts; amounts in words in both languages."""

from __future__ import annotations

import re
from fractions import Fraction
from html.parser import HTMLParser

from portal.quotas.summary import summarise
from slurm_plugins.admission.config import LAB_POLICY, Kind, load_policy
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

ZH = {"Accept-Language": "zh-CN"}


class Tables(HTMLParser):
    """Each table's header rows (rows inside <thead>), its labels and its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, list[dict[str, str | None]]]] = []
        self._in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append({"head_rows": [], "labels": [], "inputs": []})
        elif not self.tables:
            return
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._in_head:
            self.tables[-1]["head_rows"].append({})
        elif tag == "label":
            self.tables[-1]["labels"].append({})
        elif tag == "input" and dict(attrs).get("type") != "hidden":
            self.tables[-1]["inputs"].append(dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_head = False


def test_the_quota_form_is_a_table_with_one_header_row(env: Env) -> None:
    page = login(env, "erin").get("/quotas").get_data(as_text=True)
    parser = Tables()
    parser.feed(page)
    domains, projects = parser.tables[:2]
    assert len(projects["head_rows"]) == 1
    assert projects["labels"] == []  # no label repeated above every input
    inputs = projects["inputs"]
    assert len(inputs) == 2 * 4  # erin edits nlp and vision, four limits each
    assert all(i.get("aria-label") and i.get("form") for i in inputs)
    assert {"GPU cards of nlp", "GPU shards of vision"} <= {i["aria-label"] for i in inputs}
    assert domains["inputs"] == []  # a domain's quota is the platform admin's
    assert "one shard is 1/32 of a card" in page
    assert "CPU cores" in page
    zh = login(env, "erin").get("/quotas", headers=ZH).get_data(as_text=True)
    assert "1 个分片为 1/32 张卡" in zh
    assert "卡时" in zh


def test_a_save_from_the_table_reaches_the_quota(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    erin = login(env, "erin")
    page = erin.get("/quotas").get_data(as_text=True)
    version = re.search(
        rf'id="project-form-{nlp}".*?name="version" value="([0-9a-f]+)"', page, re.S
    )
    assert version
    form = {"gpus": "2", "shards": "16", "npus": "", "cpus": ""}
    r = erin.post(
        f"/quotas/projects/{nlp}",
        data={**form, "csrf_token": csrf_of(page), "version": version.group(1)},
        follow_redirects=True,
        headers=ZH,
    )
    assert "配额已保存" in r.get_data(as_text=True)
    quota = env.api("erin").get(f"/api/v1/projects/{nlp}/quota").json
    assert (quota["gpus"], quota["shards"], quota["npus"]) == (2, 16, None)
    r = erin.post(
        f"/quotas/projects/{nlp}",
        data={**form, "gpus": "two", "csrf_token": csrf_of(page)},
        follow_redirects=True,
    )
    assert "A whole number, 0 or more; empty for no limit." in r.get_data(as_text=True)
    assert env.api("erin").get(f"/api/v1/projects/{nlp}/quota").json["gpus"] == 2


def test_the_policy_preview_reads_as_a_table(env: Env) -> None:
    r = env.api("erin").put(
        f"/api/v1/projects/{env.world.projects['nlp']}/quota", json={"shards": 8}
    )
    assert r.status_code == 200
    page = login(env, "admin").get("/quotas?policy=1").get_data(as_text=True)
    table = page.index("What the admission hook allows each project")
    row = re.search(r'<th scope="row">nlp</th>(.*?)</tr>', page[table:], re.S)
    assert row
    cells = row.group(1)
    assert "1/4 of a card" in cells  # 8 shards of 32: the per-job GPU limit in words
    assert "3 days" in cells
    assert "High priority: may preempt normal and low jobs (QOS high)" in cells
    assert "gpu (GPU)" in cells
    raw = page.index("<details>")
    assert table < raw
    assert "AIPool admission policy table" in page[raw:]  # the Lua, collapsed below
    zh = login(env, "admin").get("/quotas?policy=1", headers=ZH).get_data(as_text=True)
    assert "准入策略对各项目的限制" in zh
    assert "1/4 张卡" in zh
    assert "3 天" in zh


def test_the_policy_summary_of_the_lab_policy() -> None:
    summary = summarise(load_policy(LAB_POLICY))
    cs101 = next(t for t in summary.tenants if t.name == "cs101")
    assert cs101.qos == ("normal", "low")
    assert cs101.shard_sizes == (Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1))
    assert (cs101.gpus, cs101.time_min, cs101.default_time_min) == (4, 240, 60)
    assert {p.kind for p in cs101.pools} == {Kind.GPU, Kind.NPU, Kind.CPU}
    users = {u.name: u for u in summary.users}
    assert users["alice"].qos == ("high", "normal", "low")
    assert users["root"].unrestricted
    assert summary.shards_per_gpu == 32


def test_amounts_in_words(env: Env) -> None:
    from portal.quotas.words import cards, minutes

    with env.app.test_request_context(headers=ZH):
        assert cards(None) == "不限"
        assert cards(0.25) == "1/4 张卡"
        assert cards(Fraction(3, 2)) == "1 又 1/2 张卡"
        assert minutes(90) == "90 分钟"
    with env.app.test_request_context():
        assert cards(2) == "2 cards"
        assert cards(1) == "1 card"
        assert minutes(1440 * 3) == "3 days"
        assert minutes(120) == "2 hours"


def _each_job_row(page: str, project: str) -> str:
    table = page.index('id="each-job"')
    row = re.search(rf'<th scope="row">{project}</th>(.*?)</tr>', page[table:], re.S)
    assert row, f"no row of {project} in the table of what each job may use"
    return row.group(1)


def test_a_member_sees_every_limit_that_applies_to_their_jobs(env: Env, monkeypatch) -> None:
    """The hook's per-job limits and the scheduler's guarantee, for a member (not only the
    platform admin's policy preview): what used to read 不限 while the hook refused 5 GPUs."""
    from slurm_plugins.policy.config import LAB_CONFIG

    monkeypatch.setitem(env.app.config, "POLICY_CONFIG", str(LAB_CONFIG))
    r = env.api("erin").put(
        f"/api/v1/projects/{env.world.projects['nlp']}/quota", json={"shards": 8}
    )
    assert r.status_code == 200
    zh = login(env, "alice").get("/quotas", headers=ZH).get_data(as_text=True)
    nlp = _each_job_row(zh, "nlp")
    assert "1/4 张卡" in nlp  # the project's 8 shards cap one job's GPUs, as the hook does
    assert "3 天" in nlp
    assert "GPU：4 张卡" in nlp
    assert "NPU：8 张卡" in nlp
    assert "可借用 另外 1 个项目 空闲的额度" in nlp  # its cohort's vision, which alice may not see
    assert 'id="each-job"' in zh
    assert '<th scope="row">cs101</th>' not in zh[zh.index("each-job") :]
    dave = login(env, "dave").get("/quotas").get_data(as_text=True)
    cs101 = _each_job_row(dave, "cs101")
    assert "4 cards" in cs101  # the lab policy's per-job GPUs for cs101
    assert "GPU: 2 cards" in cs101
    assert "Nothing: jobs beyond the guarantee wait until it has room." in cs101


def test_only_what_the_site_runs_is_shown(env: Env, monkeypatch) -> None:
    page = login(env, "alice").get("/quotas").get_data(as_text=True)
    assert "Guaranteed" not in page  # no POLICY_CONFIG: no guarantee columns
    assert "GPUs per job" in _each_job_row(page, "nlp") or "GPUs per job" in page
    monkeypatch.setitem(env.app.config, "ADMISSION_DIR", None)
    page = login(env, "alice").get("/quotas").get_data(as_text=True)
    assert 'id="each-job"' not in page  # the portal installs no hook: nothing claimed


def test_the_job_form_says_what_one_job_may_use(env: Env, monkeypatch) -> None:
    from slurm_plugins.policy.config import LAB_CONFIG

    monkeypatch.setitem(env.app.config, "POLICY_CONFIG", str(LAB_CONFIG))
    page = login(env, "dave").get("/jobs/new", headers=ZH).get_data(as_text=True)
    limits = page[page.index("各项目每个作业可用的资源") :]
    limits = limits[: limits.index("</details>")]
    assert "<b>cs101</b>" in limits
    assert "4 张卡" in limits  # the lab policy's per-job GPUs for cs101
    assert "4 小时" in limits  # and its time limit
    assert "GPU：2 张卡" in limits  # lab-daemon.yaml's guarantee
    assert "<b>nlp</b>" not in limits  # dave submits to cs101 only


def test_a_broken_base_policy_leaves_the_pages_standing(env: Env, monkeypatch, tmp_path) -> None:
    """The base admission policy file that no longer loads is the admins' to fix (their policy
    page says why); the quotas page and the job form still open, without the hook's rows."""
    bad = tmp_path / "policy.yaml"
    bad.write_text("tenants: [\n")
    monkeypatch.setitem(env.app.config, "ADMISSION_POLICY", str(bad))
    quotas = login(env, "alice").get("/quotas")
    assert quotas.status_code == 200
    assert 'id="each-job"' not in quotas.get_data(as_text=True)
    assert login(env, "alice").get("/jobs/new").status_code == 200
