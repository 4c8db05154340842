"""marshmallow fields for job specs: allow-lists, single-line text, sizes, times and fractions.

Every field says in its message what it accepts, so a user can fix a spec from the error
alone. Text never carries control characters; only ``script`` may span lines.
"""

from __future__ import annotations

import math
import re
import shlex
import unicodedata
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

from marshmallow import ValidationError, fields

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.shards import fraction_to_shards
from translations import N_

MAX_LINE = 4096
MAX_SCRIPT = 64 * 1024
MAX_WHOLE_GPUS = 64
MAX_TIME_MIN = 365 * 24 * 60

# Line breaks that are not control characters but still end a line for some readers.
_LINE_BREAKS = {"\u2028", "\u2029"}


def bad_characters(text: str, *, multiline: bool = False) -> str | None:
    """Why ``text`` may not be used, or None: control characters, lone surrogates."""
    for ch in text:
        if multiline and ch in "\n\t":
            continue
        cat = unicodedata.category(ch)
        if ch in _LINE_BREAKS or cat == "Cc":
            what = "newlines" if ch in "\n\r\u2028\u2029\x85" else "control characters"
            return f"must not contain {what} ({ch!a})"
        if cat == "Cs":
            return "must be valid Unicode text (found a lone surrogate)"
    return None


class Line(fields.Field[str]):
    """A single line of text, optionally matching ``pattern`` (explained by ``hint``)."""

    def __init__(
        self,
        *,
        pattern: str | None = None,
        hint: str = "",
        max_length: int = MAX_LINE,
        multiline: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pattern = re.compile(pattern) if pattern else None
        self.hint = hint
        self.max_length = max_length
        self.multiline = multiline

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> str:
        return check_line(
            value,
            pattern=self.pattern,
            hint=self.hint,
            max_length=self.max_length,
            multiline=self.multiline,
        )


def check_line(
    value: Any,
    *,
    pattern: re.Pattern[str] | None = None,
    hint: str = "",
    max_length: int = MAX_LINE,
    multiline: bool = False,
) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"must be a string, not {_kind(value)}")
    if not value:
        raise ValidationError("must not be empty")
    why = bad_characters(value, multiline=multiline)
    if why:
        raise ValidationError(why)
    if len(value) > max_length:
        raise ValidationError(f"is longer than {max_length} characters")
    if pattern is not None and not pattern.fullmatch(value):
        raise ValidationError(f"{value!r} is not allowed: {hint}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return N_("a boolean")
    if isinstance(value, int | float):
        return N_("a number (quote it in YAML)")
    if isinstance(value, list):
        return N_("a list")
    if isinstance(value, dict):
        return N_("a mapping")
    return type(value).__name__


# --------------------------------------------------------------------- allow-lists
NAME = r"[A-Za-z][A-Za-z0-9_.-]{0,62}"
NAME_HINT = N_("use a letter, then letters, digits, '_', '.' or '-' (at most 63)")
ACCOUNT = r"[a-z0-9][a-z0-9_-]{0,63}"
ACCOUNT_HINT = N_("Slurm account names are lower-case letters, digits, '_' and '-'")
WORD = r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}"
WORD_HINT = N_("use letters, digits, '_', '.', '+' or '-'")
NODES = r"[A-Za-z0-9][A-Za-z0-9_.-]*(\[[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\])?[A-Za-z0-9_.-]*"
NODES_HINT = N_("a node name or range like gpu[1-4]")
MODULE = r"[A-Za-z0-9][A-Za-z0-9_.+/-]{0,127}"
MODULE_HINT = N_("a module name like cuda/12.1 (letters, digits, '_', '.', '+', '/', '-')")
EMAIL = r"[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+"
EMAIL_HINT = N_("an e-mail address like alice@example.org")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# Characters of a path: letters and digits of any script, and . _ - + @ = , /
_PATH_CHARS = r"[\w.+@=,/-]"
ABS_PATH = re.compile(rf"/{_PATH_CHARS}*")
REL_PATH = re.compile(rf"[\w.+@=,-]{_PATH_CHARS}*")
PATH_HINT = N_(
    "use letters, digits, '.', '_', '-', '+', '@', '=', ',' and '/' only "
    "(no spaces, quotes, '$', '%' or '..')"
)
# Variables that change how the job's own shell runs, and the prefixes AIPool and Slurm own.
RESERVED_ENV = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "BASH_XTRACEFD",
        "CDPATH",
        "GLOBIGNORE",
        "PROMPT_COMMAND",
        "POSIXLY_CORRECT",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
    }
)
RESERVED_ENV_PREFIXES = ("SLURM_", "SLURMD_", "SBATCH_", "SRUN_", "AIPOOL_", "BASH_FUNC_")


def check_path(value: Any, *, relative_ok: bool = False) -> str:
    text = check_line(value)
    pattern = REL_PATH if relative_ok and not text.startswith("/") else ABS_PATH
    if not pattern.fullmatch(text):
        what = N_("a path") if relative_ok else N_("an absolute path")
        raise ValidationError(f"{text!r} is not allowed: must be {what}; {PATH_HINT}")
    parts = text.split("/")
    if ".." in parts:
        raise ValidationError(f"{text!r} is not allowed: '..' is not allowed in paths")
    if any(p.startswith("-") for p in parts):
        raise ValidationError(f"{text!r} is not allowed: no part of a path may start with '-'")
    return text


class PathField(fields.Field[str]):
    def __init__(self, *, relative_ok: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.relative_ok = relative_ok

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> str:
        return check_path(value, relative_ok=self.relative_ok)


def check_env_name(name: Any) -> str:
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise ValidationError(
            f"{name!r} is not a valid variable name: use letters, digits and '_', "
            "not starting with a digit"
        )
    if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIXES):
        raise ValidationError(f"{name} is reserved: AIPool or Slurm sets it for the job")
    return name


class EnvField(fields.Field[dict[str, str]]):
    """``env:``: a mapping of variable names to single-line strings; errors name the variable."""

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise ValidationError(
                f"must be a mapping of variable names to strings, not {_kind(value)}"
            )
        errors: dict[str, list[str]] = {}
        out: dict[str, str] = {}
        for key, val in value.items():
            try:
                name = check_env_name(key)
                out[name] = check_line(val, max_length=MAX_LINE) if val != "" else ""
            except ValidationError as exc:
                errors[str(key)] = list(_messages(exc))
        if errors:
            raise ValidationError(errors)
        return out


def _messages(exc: ValidationError) -> list[str]:
    m = exc.messages
    return [str(x) for x in m] if isinstance(m, list) else [str(m)]


class Command(fields.Field[tuple[str, ...]]):
    """A program and its arguments: a list of words, or one line split like a shell would.

    The words are never given to a shell: ``$(id)`` or ``;`` reach the program as text.
    """

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> tuple[str, ...]:
        if isinstance(value, str):
            line = check_line(value)
            try:
                words = shlex.split(line)
            except ValueError as exc:
                raise ValidationError(f"cannot be split into words: {exc}") from None
        elif isinstance(value, list):
            words = []
            for i, word in enumerate(value):
                try:
                    words.append(check_line(word) if word != "" else "")
                except ValidationError as exc:
                    raise ValidationError({i: _messages(exc)}) from None
        else:
            raise ValidationError(f"must be a string or a list of words, not {_kind(value)}")
        if not words or not words[0]:
            raise ValidationError("must name a program to run")
        if len(words) > 1024:
            raise ValidationError("has more than 1024 words")
        return tuple(words)


class Gpus(fields.Field[Fraction]):
    """Whole cards (``2``), a share of one card on the 1/32 grid (``0.25``, ``"5/32"``), or a
    share above one card on that grid (``1.25``: shards from several cards, Slurm 23.11+)."""

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> Fraction:
        return parse_gpus(value)


_NUMBER = re.compile(r"\s*(\d+(\.\d+)?|\d+\s*/\s*\d+)\s*")


def parse_gpus(value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValidationError("must be a number of cards or a fraction like 0.25 or '1/8'")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError("must be a finite number")
    if isinstance(value, str):
        if not _NUMBER.fullmatch(value):
            raise ValidationError(f"{value!r} is not a number of cards or a fraction like '1/8'")
        try:
            number = Fraction(value.replace(" ", ""))
        except ZeroDivisionError:
            raise ValidationError(f"{value!r} divides by zero") from None
    else:
        number = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    if number < 0:
        raise ValidationError("must not be negative")
    if number == 0:
        return Fraction(0)
    if number > 1:
        if number > MAX_WHOLE_GPUS:
            raise ValidationError(f"at most {MAX_WHOLE_GPUS} cards per node")
        if (number * DEFAULT_SHARDS_PER_GPU).denominator != 1:
            whole = math.floor(number)
            raise ValidationError(
                f"{value} cards: more than one card is a whole number of cards, or whole cards "
                f"and a multiple of 1/{DEFAULT_SHARDS_PER_GPU} of one more (e.g. {whole}.25)"
            )
        return number
    if number == 1:
        return number
    try:
        shards = fraction_to_shards(value, DEFAULT_SHARDS_PER_GPU)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    return Fraction(shards, DEFAULT_SHARDS_PER_GPU)


class Memory(fields.Field[int]):
    """``16G``, ``512M``, ``1.5T`` or a plain number of MiB → MiB."""

    _RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)
    _UNITS: ClassVar[dict[str, Fraction | int]] = {
        "K": Fraction(1, 1024),
        "": 1,
        "M": 1,
        "G": 1024,
        "T": 1024 * 1024,
    }

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> int:
        if isinstance(value, bool):
            raise ValidationError("must be a size like 16G or 512M")
        text = str(value) if isinstance(value, int | str) else None
        m = self._RE.fullmatch(text) if text is not None else None
        if not m:
            raise ValidationError(f"{value!r} is not a size like 16G, 512M or 1.5T")
        mib = math.ceil(Fraction(m.group(1)) * self._UNITS[m.group(2).upper()])
        if not 1 <= mib <= 64 * 1024 * 1024:
            raise ValidationError("must be between 1M and 64T")
        return mib


class Duration(fields.Field[int]):
    """A time limit in minutes: ``90``, ``"30m"``, ``"2h"``, ``"1:30:00"``, ``"1-12:00"``."""

    _UNIT = re.compile(r"\s*(\d+)\s*([smhd])\s*")
    _CLOCK = re.compile(r"\s*(?:(\d+)-)?(\d+)(?::(\d{1,2}))?(?::(\d{1,2}))?\s*")

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> int:
        minutes = self._minutes(value)
        if minutes is None:
            raise ValidationError(
                f"{value!r} is not a time limit like 90 (minutes), '30m', '2h', '1d', "
                "'1:30:00' or '1-12:00:00'"
            )
        if not 1 <= minutes <= MAX_TIME_MIN:
            raise ValidationError("must be between 1 minute and 365 days")
        return minutes

    def _minutes(self, value: Any) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if not isinstance(value, str):
            return None
        if m := self._UNIT.fullmatch(value):
            n, unit = int(m.group(1)), m.group(2)
            per_unit = {
                "s": Fraction(1, 60),
                "m": Fraction(1),
                "h": Fraction(60),
                "d": Fraction(1440),
            }
            return math.ceil(per_unit[unit] * n)
        if m := self._CLOCK.fullmatch(value):
            days, first, second, third = m.groups()
            parts = [int(p) for p in (first, second, third) if p is not None]
            if days is not None:  # D-H, D-H:M, D-H:M:S
                hours, mins, secs = (*parts, 0, 0)[:3]
            elif len(parts) == 3:  # H:M:S
                hours, mins, secs = parts
            else:  # M or M:S, as Slurm reads them
                hours, mins, secs = 0, parts[0], (parts[1] if len(parts) == 2 else 0)
            if secs >= 60 or (mins >= 60 and (days is not None or len(parts) == 3)):
                return None
            return int(days or 0) * 1440 + hours * 60 + mins + math.ceil(secs / 60)
        return None
