"""The labels AIPool puts in a job's comment: ``aipool:name=train,anti_affinity=g1,gang=exp1``.

One codec for every reader and writer: jobspec writes the labels, the policy daemon, the
portal and ``aipool jobs`` read them, and the admission hook (``job_submit.lua``) reads the
same grammar. A key is a letter then letters, digits or ``_``; a value is 1-64 letters, digits,
``_``, ``.`` or ``-``, so neither can carry the ``,`` and ``=`` that separate them.

Writing refuses a label outside that grammar. Reading never fails: a comment is whatever a
user typed after ``--comment``, so items outside the grammar are left out and a hand-written
comment cannot smuggle a separator into a label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PREFIX = "aipool:"
KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
VALUE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


#: The admission hook's label, in a job's admin comment (which only Slurm's administrators
#: and the hook write), on a job it gave a begin time for the placement daemon to pin it.
DEFERRED = ("placement", "deferred")


def tagged_deferred(admin_comment: str | None) -> bool:
    """Whether the admission hook deferred the job for the placement daemon."""
    return decode(admin_comment).get(DEFERRED[0]) == DEFERRED[1]


class LabelError(ValueError):
    """A label that cannot be written; the message names the label."""


def check(key: str, value: str) -> None:
    """Raise :class:`LabelError` unless ``key=value`` fits the grammar."""
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise LabelError(
            f"label {key!r}: a key is a letter, then letters, digits or '_' (at most 64)"
        )
    if not isinstance(value, str) or not VALUE.fullmatch(value):
        raise LabelError(f"label {key}={value!r}: a value is 1-64 letters, digits, '_', '.' or '-'")


def encode(labels: Mapping[str, str]) -> str:
    """``{"name": "train"}`` → ``aipool:name=train``, in the mapping's order."""
    for key, value in labels.items():
        check(key, value)
    return PREFIX + ",".join(f"{k}={v}" for k, v in labels.items())


def decode(comment: str | None) -> dict[str, str]:
    """The labels of a job comment; ``{}`` for a comment AIPool did not write.

    Spaces around keys and values are ignored and a later key wins, as in the admission hook.
    """
    if not comment or not comment.startswith(PREFIX):
        return {}
    out: dict[str, str] = {}
    for item in comment[len(PREFIX) :].split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if sep and KEY.fullmatch(key) and VALUE.fullmatch(value):
            out[key] = value
    return out
