"""What the admission hook says to a user it refuses, in the user's language.

The hook (``job_submit.lua``) is rendered with every message below in every language of the
catalogue (:mod:`translations`), as Lua format strings (``%s``, ``%d``, which Lua's
``string.format`` reads as Python's ``%`` does). On a refusal it picks the language of the
submission: ``AIPOOL_LANG`` in the job's environment (the portal sets it to the reader's
language), else ``LC_ALL``, ``LC_MESSAGES`` or ``LANG`` (what ``sbatch`` passes from the
user's shell): ``zh…`` reads Chinese, anything else English. Each message's arguments are
Slurm's own words (partitions, ``--qos=…``, numbers), so a sentence is whole in one language.
"""

from __future__ import annotations

from collections.abc import Mapping

from translations import N_, gettext

#: the hook's language codes -> the catalogue's locale
LANGUAGES: Mapping[str, str] = {"en": "en", "zh": "zh_CN"}

MESSAGES: Mapping[str, str] = {
    "bad_group": N_(
        "the anti-affinity group in --comment must be 1-64 letters, digits, '_', '.' or '-'"
    ),
    "no_account": N_("user %s has no Slurm account; ask your tenant administrator to add you"),
    "not_tenant": N_(
        "account %s is not a tenant of the admission policy; submit with --account set to one "
        "of your projects"
    ),
    "qos_unknown": N_("QOS %s is not a priority class; %s may use %s"),
    "class_closed": N_("priority class %s (--qos=%s) is not open to %s; use %s"),
    "partition_unknown": N_(
        "partition %s is in no pool of the admission policy; tenant %s may use %s"
    ),
    "pool_closed": N_("partition %s is in pool %s, which is not open to tenant %s; it may use %s"),
    "wrong_kind": N_("partition %s holds %s, but this job asks for %s; submit it with -p %s"),
    "wrong_kind_nowhere": N_(
        "partition %s holds %s, but this job asks for %s; tenant %s has no pool with %s"
    ),
    "shard_fraction": N_("shard:%s is not a share of a GPU: ask for 1 to %d shards"),
    "shard_too_big": N_(
        "shard:%d does not fit on one GPU: a job gets at most %d shards (a whole card) per "
        "node; ask for whole GPUs with --gres=gpu:N"
    ),
    "shard_size": N_("shard:%d is not a size tenant %s may use: ask for %s shards (of %d per GPU)"),
    "too_many_cards": N_("this job asks for %s %s in all; tenant %s may use at most %s per job"),
    "too_long": N_(
        "time limit %s is over the %s tenant %s allows per job; ask for less with --time"
    ),
    "closed": N_(
        "job submission is closed: the admission policy could not be loaded; please tell the "
        "cluster administrators"
    ),
    # who a rule is for
    "tenant": N_("tenant %s"),
    "user": N_("user %s"),
    # what a partition holds or a job asks for
    "gpu": N_("GPUs"),
    "npu": N_("NPUs"),
    "cpu": N_("no accelerators"),
    "accel": N_("MLUs, DCUs or XPUs"),
    # the policy table's lists of names (``a, b and c``), joined in the reader's language
    "and": N_("%s and %s"),
    "or": N_("%s or %s"),
    "comma": N_(", "),
    # between two problems of one job
    "also": N_("; "),
    "none": N_("none"),
}


def catalogue() -> dict[str, dict[str, str]]:
    """Language code -> message key -> the message in that language (Lua format strings)."""
    return {
        code: {key: gettext(locale, text) for key, text in MESSAGES.items()}
        for code, locale in LANGUAGES.items()
    }
