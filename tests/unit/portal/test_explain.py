"""Slurm's job states and reasons, and the policy daemon's decisions, in words: every state and
every common reason has both languages; codes nothing explains say so, with the code kept."""

from __future__ import annotations

import re

import pytest

from portal.jobs.explain import (
    STATES,
    entry,
    explain_reason,
    policy_words,
    split_reason,
    state_words,
)
from portal.jobs.reasons import REASONS
from slurm_plugins.client.models import JobState

CJK = re.compile(r"[\u4e00-\u9fff]")

#: the reasons users meet most (squeue(1) "JOB REASON CODES"): each explained in its own words
COMMON = (
    "Priority",
    "Resources",
    "Dependency",
    "DependencyNeverSatisfied",
    "JobHeldUser",
    "JobHeldAdmin",
    "BeginTime",
    "ReqNodeNotAvail",
    "PartitionDown",
    "PartitionInactive",
    "PartitionTimeLimit",
    "PartitionNodeLimit",
    "AssocGrpGRES",
    "AssocGrpCpuLimit",
    "AssocGrpMemLimit",
    "AssocGrpGRESMinutes",
    "AssocMaxJobsLimit",
    "AssocGrpJobsLimit",
    "QOSGrpGRES",
    "QOSMaxJobsPerUserLimit",
    "QOSMaxGRESPerUser",
    "launch failed requeued held",
    "BadConstraints",
    "InvalidAccount",
    "InvalidQOS",
    "NodeDown",
    "Reservation",
)


@pytest.mark.parametrize("code", COMMON)
def test_every_common_reason_has_its_own_words_in_both_languages(code: str) -> None:
    assert code in REASONS
    en = explain_reason(code, "en")
    zh = explain_reason(code, "zh_CN")
    assert en is not None
    assert zh is not None
    assert en.known
    assert en.code == zh.code == code
    assert en.meaning.endswith(".")
    assert en.advice.endswith(".")
    for said in (zh.meaning, zh.advice):
        assert CJK.search(said), (code, said)
        assert said not in (en.meaning, en.advice)


@pytest.mark.parametrize("code", sorted(REASONS))
def test_every_reason_in_the_table_is_translated(code: str) -> None:
    zh = explain_reason(code, "zh_CN")
    assert zh is not None
    assert CJK.search(zh.meaning), code
    assert CJK.search(zh.advice), code


def test_a_full_card_quota_says_what_it_means_and_what_to_do() -> None:
    zh = explain_reason("AssocGrpGRES", "zh_CN")
    assert zh is not None
    assert zh.meaning == "项目的卡配额已用满。"
    assert zh.advice == "等待本项目其他作业结束，或请项目管理员提高配额。"


@pytest.mark.parametrize("state", list(JobState))
def test_every_state_has_a_label_and_a_meaning_in_both_languages(state: JobState) -> None:
    assert state in STATES
    en_label, en_meaning = state_words(state, "en")
    zh_label, zh_meaning = state_words(state, "zh_CN")
    assert en_label
    assert en_meaning.endswith(".")
    assert CJK.search(zh_label), state
    assert CJK.search(zh_meaning), state


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("None", None),
        ("", None),
        (None, None),
        ("(Priority)", ("Priority", "")),
        (
            "ReqNodeNotAvail, UnavailableNodes:gpu[1-2]",
            ("ReqNodeNotAvail", "UnavailableNodes:gpu[1-2]"),
        ),
        ("launch failed requeued held", ("launch failed requeued held", "")),
        ("AssocGrpGRES", ("AssocGrpGRES", "")),
    ],
)
def test_slurms_reason_text_splits_into_code_and_detail(
    text: str | None, expected: tuple[str, str] | None
) -> None:
    assert split_reason(text) == expected


@pytest.mark.parametrize(
    ("code", "like"),
    [
        ("AssocGrpBilling", "AssocGrp"),
        ("AssocMaxNodePerJobLimitX", "AssocMax"),
        ("QOSGrpEnergy", "QOSGrp"),
        ("QOSMaxNodePerUserLimit", "QOSMax"),
        ("MaxGRESPerAccount", "Max"),
    ],
)
def test_a_limit_without_its_own_entry_is_explained_by_its_family(code: str, like: str) -> None:
    said = entry(code)
    assert said is not None
    zh = explain_reason(code, "zh_CN")
    assert zh is not None
    assert zh.known
    assert CJK.search(zh.meaning)


def test_a_code_nothing_explains_says_so_and_keeps_the_code() -> None:
    en = explain_reason("SomethingNew", "en")
    assert en is not None
    assert not en.known
    assert en.code == "SomethingNew"
    assert "no explanation" in en.meaning
    zh = explain_reason("SomethingNew", "zh_CN")
    assert zh is not None
    assert CJK.search(zh.meaning)


@pytest.mark.parametrize(
    ("decision", "en", "zh"),
    [
        (
            "gang g1: 3 of 4 members queued",
            "Gang group g1: held until all 4 members are queued (3 so far).",
            "成组调度组 g1：挂起，直到全部 4 个成员都已排队（目前 3 个）。",
        ),
        (
            "gang g1: the 4 members cannot all start now",
            "Gang group g1: held until all 4 members can start at once; they start together.",
            "成组调度组 g1",
        ),
        (
            "gang g1: member 42 is not eligible yet (BeginTime)",
            "Gang group g1: held because member job 42 cannot start yet: "
            "The start time it asked for has not come yet.",
            "尚未到达它指定的开始时间",
        ),
        (
            "anti-affinity web: kept off gpu[1-2] (members 7,8)",
            "Anti-affinity group web: kept off gpu[1-2], where other members run.",
            "反亲和组 web",
        ),
        (
            "reschedule: moved to gpu2 to defragment",
            "Rescheduling: moved to node gpu2 to reduce fragmentation.",
            "碎片",
        ),
        (
            "capacity: tenant cs101 within its guarantee (2 of 2 gpu)",
            "Capacity guarantee: tenant cs101 is within its guarantee (2 of 2 GPU cards).",
            "租户 cs101 在其保障额度之内（2 / 2 张 GPU 卡）",
        ),
        (
            "capacity: tenant nlp within its guarantee (1.25 of 4 gpu, 2 of 16 cpu)",
            "Capacity guarantee: tenant nlp is within its guarantee (1.25 of 4 GPU cards, "
            "2 of 16 CPUs).",
            "（1.25 / 4 张 GPU 卡、2 / 16 个 CPU）",
        ),
        (
            "capacity: cohort research has 0 gpu of quota left, job needs 1",
            "Capacity guarantee: the tenants of cohort research have 0 GPU cards of their quota "
            "left; the job needs 1 GPU card.",
            "资源组 research 的租户只剩 0 张 GPU 卡配额，而作业需要 1 张 GPU 卡",
        ),
        (
            "capacity: tenant nlp has 0.5 npu of quota left, job needs 2",
            "Capacity guarantee: tenant nlp has 0.5 NPU cards of its quota left; the job needs "
            "2 NPU cards.",
            "租户 nlp 只剩 0.5 张 NPU 卡配额，而作业需要 2 张 NPU 卡",
        ),
        (
            "capacity: tenant nlp at its borrowing limit: 12+1 gpu > 8 guaranteed + 4 borrowable",
            "Capacity guarantee: tenant nlp is at its borrowing limit: 12 GPU cards in use and 1 "
            "GPU card more asked for, beyond 8 GPU cards guaranteed and 4 GPU cards it may "
            "borrow.",
            "已用 12 张 GPU 卡，再申请 1 张 GPU 卡，超过保障的 8 张 GPU 卡加可借用的 4 张 GPU 卡",
        ),
        (
            "capacity: tenant vision over guarantee by 2 gpu, 1 npu, borrowing in QOS low",
            "Capacity guarantee: tenant vision is over its guarantee by 2 GPU cards, 1 NPU card; "
            "the job borrows from other tenants, in QOS low (it may be requeued when they need "
            "it).",
            "租户 vision 超出保障 2 张 GPU 卡、1 张 NPU 卡",
        ),
        (
            "capacity: reclaimed for tenant nlp's guarantee (job 42); tenant vision was borrowing",
            "Capacity guarantee: requeued so that tenant nlp gets its guarantee (job 42); tenant "
            "vision was borrowing.",
            "为保障租户 nlp 的额度（作业 42）而重新排队；租户 vision 当时在借用",
        ),
        (
            "placement: gpu2 (frag: score 0.75, best of 2 fitting nodes (2 tied))",
            "Placement: it is to run on node gpu2 (scorer frag: score 0.75, the best of 2 nodes "
            "where it fits (2 tied)).",
            "评分器 frag",
        ),
        (
            "placement: gpu1 (kept)",
            "Placement: it is to run on node gpu1 (kept where it was placed).",
            "gpu1",
        ),
        (
            "placement: not on gpu1,gpu2 (a card there still has shards)",
            "Placement: kept off gpu1,gpu2, where a card still holds shards of other jobs (Slurm "
            "could give that card whole to this job).",
            "gpu1,gpu2",
        ),
        (
            "gang g1: all 4 members running",
            "Gang group g1: all 4 members are running.",
            "成组调度组 g1",
        ),
        (
            "gang g1: 2 of 4 running, the rest released",
            "Gang group g1: 2 of its 4 members run; the rest were released.",
            "成组调度组 g1",
        ),
        (
            "placement: waits for one card with room for its share "
            "(Slurm would split it over several cards)",
            "Placement: it waits for one card with room for its share (Slurm, placing it "
            "itself, would split it over several cards).",
            "会把它拆到多张卡上",
        ),
        (
            "score 0.667 (priority 0.500 x2, fair 0.334 x1) -> SiteFactor 666851",
            "Queue order: score 0.667 (priority 0.500 x2, fair share 0.334 x1), given to Slurm "
            "as priority factor 666851.",
            "排队顺序：得分 0.667（优先级 0.500 \u00d72、公平份额 0.334 \u00d71）",
        ),
        (
            "score 0.412 (fifo 0.412 x1, capacity 0.000 x1) -> SiteFactor 411000",
            "Queue order: score 0.412 (arrival order 0.412 x1, capacity guarantee 0.000 x1), "
            "given to Slurm as priority factor 411000.",
            "（到达顺序 0.412 \u00d71、容量保障 0.000 \u00d71）",
        ),
        (
            "fifo 0.412 (submitted 2026-12-03 08:00:00 UTC)",
            "Queue order (arrival order): score 0.412, submitted 2026-12-03 08:00:00 UTC.",
            "排队顺序（到达顺序）：得分 0.412，提交于 2026-12-03 08:00:00 UTC。",
        ),
        (
            "fair 0.707 (tenant nlp used 40% of recent use for a 50% share)",
            "Queue order (fair share): score 0.707, tenant nlp used 40% of recent use for a "
            "50% share.",
            "租户 nlp 占近期用量的 40%，份额为 50%",
        ),
        (
            "priority 0.900 (class high 0.80 + aging 0.100)",
            "Queue order (priority): score 0.900, class high 0.80 + aging 0.100.",
            "排队顺序（优先级）：得分 0.900，优先级等级 high 0.80 + 等待加成 0.100。",
        ),
        (
            "priority 0.500 (class normal 0.50)",
            "Queue order (priority): score 0.500, class normal 0.50.",
            "优先级等级 normal 0.50",
        ),
        ("something new: 1", "Scheduling policy: something new: 1", "调度策略：something new: 1"),
    ],
)
def test_the_policy_daemons_decisions_in_words(decision: str, en: str, zh: str) -> None:
    assert policy_words(decision, "en") == en
    assert zh in policy_words(decision, "zh_CN")


@pytest.mark.parametrize(
    ("admin_comment", "restarts", "by", "zh_words"),
    [
        ("", 0, None, "指定的开始时间"),
        ("aipool:placement=deferred", 0, "placement", "正在为它挑选"),
        # a user's own --comment cannot claim the deferral: only the admin comment counts
        ("", 1, "requeue", "重新排队"),
        ("aipool:placement=deferred", 2, "requeue", "重新排队"),
    ],
)
def test_a_begin_time_nobody_asked_for_is_not_called_the_users(
    admin_comment: str, restarts: int, by: str | None, zh_words: str
) -> None:
    """A job the hook deferred for the placement daemon, or one Slurm requeued, waits for a
    begin time its user never set: the page says who set it."""
    from portal.jobs.words import begin_set_by
    from slurm_plugins.client.models import Job

    job = Job(
        job_id=7,
        name="train",
        user="alice",
        account="vision",
        partition="gpu",
        qos="normal",
        state=JobState.PENDING,
        reason="BeginTime",
        comment="aipool:placement=deferred",
        admin_comment=admin_comment,
        restart_count=restarts,
    )
    assert begin_set_by(job) == by
    zh = explain_reason(job.reason, "zh_CN", begin_by=begin_set_by(job))
    en = explain_reason(job.reason, "en", begin_by=begin_set_by(job))
    assert zh is not None
    assert en is not None
    assert zh_words in zh.meaning, zh.meaning
    assert zh.code == "BeginTime"
    assert ("asked for" in en.meaning) is (by is None)
