"""A report as a PDF (matplotlib): the site's name and logo, a table with its columns in
words, a card-hour chart, pool utilisation and top users, in the reader's language.

Chinese needs a CJK font: Noto Sans CJK SC from Debian's ``fonts-noto-cjk``, found through
matplotlib's font list, the known Debian paths or ``fc-match``. The PDF embeds the glyphs it
uses (matplotlib's Type 3 subsets, with their Unicode mapping, so the text can be searched
and copied). Without that font a Chinese PDF is refused rather than drawn with empty boxes;
an English one still uses it, where present, for Chinese names.
"""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import textwrap
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from accounting import labels
from accounting.report import Line, Report
from accounting.table import Brand, ExportError, cells, header, title
from translations import N_, Message, gettext, normalise

log = logging.getLogger("aipool.accounting")

CJK_FAMILY = "Noto Sans CJK SC"
LATIN_FAMILY = "DejaVu Sans"
# where Debian's fonts-noto-cjk puts the collection (matplotlib's font list may predate it)
KNOWN_CJK_FILES = (
    Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"),
    Path("/usr/share/fonts/opentype/noto/NotoSansCJKsc-Regular.otf"),
)
NO_CJK_FONT = N_(
    "The Chinese font is not installed (Debian package fonts-noto-cjk), so a Chinese PDF "
    "cannot be made."
)
A4 = (8.27, 11.69)


def _known(family: str) -> bool:
    from matplotlib import font_manager

    return any(f.name == family for f in font_manager.fontManager.ttflist)


def _fc_match() -> Path | None:
    fc = shutil.which("fc-match")
    if fc is None:
        return None
    try:
        out = subprocess.run(
            [fc, "-f", "%{file}", f"{CJK_FAMILY}:lang=zh-cn"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None
    return path if path and "CJK" in path.name else None


@cache
def cjk_family() -> str | None:
    """The CJK font family matplotlib can draw with, registering its file if need be."""
    from matplotlib import font_manager

    if _known(CJK_FAMILY):
        return CJK_FAMILY
    for path in (*KNOWN_CJK_FILES, _fc_match()):
        if path is not None and path.is_file():
            font_manager.fontManager.addfont(str(path))
            if _known(CJK_FAMILY):
                return CJK_FAMILY
    return None


def families(locale: str | None) -> list[str]:
    """The fonts to draw with, first choice first (each glyph from the first that has it)."""
    cjk = cjk_family()
    if normalise(locale) == "zh_CN":
        if cjk is None:
            raise ExportError(Message(NO_CJK_FONT))
        return [cjk, LATIN_FAMILY]
    return [LATIN_FAMILY, cjk] if cjk else [LATIN_FAMILY]


def _logo(fig: Any, logo: Path | None) -> bool:
    """The site's logo in the top left corner; PNG and JPEG (an SVG is left out)."""
    if logo is None or logo.suffix.lower() == ".svg" or not logo.is_file():
        return False
    from matplotlib import image

    try:
        img = image.imread(str(logo))
    except (OSError, ValueError, SyntaxError) as exc:
        log.warning("the site logo %s cannot be drawn: %s", logo, exc)
        return False
    ax = fig.add_axes((0.06, 0.93, 0.06, 0.05))
    ax.imshow(img)
    ax.axis("off")
    return True


def _heading(fig: Any, report: Report, locale: str | None, brand: Brand) -> None:
    left = 0.14 if _logo(fig, brand.logo) else 0.06
    fig.text(left, 0.965, brand.name, fontsize=15, fontweight="bold", va="center")
    fig.text(left, 0.94, title(report, locale), fontsize=10, va="center")


def _wrap(text: str, width: int = 12) -> str:
    # English labels wrap at spaces; Chinese ones are short enough for a column
    return "\n".join(textwrap.wrap(text, width)) if " " in text else text


def _table(fig: Any, report: Report, locale: str | None) -> None:
    ax = fig.add_axes((0.06, 0.52, 0.88, 0.38))
    ax.axis("off")
    rows = [_row(ln, locale) for ln in report.lines[:25]]
    rows.append(_row(report.total, locale, total=True))
    table = ax.table(
        cellText=rows, colLabels=[_wrap(h) for h in header(report, locale)], loc="upper center"
    )
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    for (r, _c), cell in table.get_celld().items():
        if r == 0:
            cell.set_height(cell.get_height() * 2.2)
            cell.set_text_props(fontweight="bold")
        elif r == len(rows):
            cell.set_text_props(fontweight="bold")


def _row(line: Line, locale: str | None, *, total: bool = False) -> list[str]:
    key, *values = cells(line, locale, total=total)
    shown = [labels.number(values[0], locale, 0), *(labels.number(v, locale) for v in values[1:])]
    return [str(key) or labels.label(locale, labels.NONE), *shown]


def _hours_axis(ax: Any, top: float, locale: str | None) -> None:
    """From 0, to a little past the largest bar; at least one card-hour wide, so that no use
    at all is an empty chart from 0 rather than an axis around zero."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xlim(0, max(top * 1.15, 1.0))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: labels.number(v, locale, 1)))


def _empty(ax: Any, locale: str | None) -> None:
    ax.text(
        0.5,
        0.5,
        gettext(locale, N_("No usage in this period.")),
        transform=ax.transAxes,
        ha="center",
        va="center",
        color="0.4",
    )
    ax.set_yticks([])


def _card_hours(fig: Any, report: Report, locale: str | None) -> None:
    chart = fig.add_axes((0.22, 0.07, 0.72, 0.36))
    lines = report.lines[:15]
    keys = [ln.key or labels.label(locale, labels.NONE) for ln in lines]
    gpu = [float(ln.gpu_card_hours) for ln in lines]
    npu = [float(ln.npu_card_hours) for ln in lines]
    gpu_label = labels.label(locale, labels.COLUMNS["gpu_card_hours"])
    npu_label = labels.label(locale, labels.COLUMNS["npu_card_hours"])
    chart.barh(keys, gpu, label=gpu_label, color="C0")
    chart.barh(keys, npu, left=gpu, label=npu_label, color="C1")
    chart.invert_yaxis()
    chart.set_xlabel(gettext(locale, N_("Card-hours")))
    chart.set_title(gettext(locale, N_("Card-hours by %(by)s"), by=labels.dim(locale, report.by)))
    _hours_axis(chart, max((g + n for g, n in zip(gpu, npu, strict=True)), default=0), locale)
    if lines:
        chart.legend(loc="lower right")
    else:
        _empty(chart, locale)


def _utilisation(fig: Any, report: Report, locale: str | None) -> None:
    from matplotlib.ticker import FuncFormatter

    ax = fig.add_axes((0.12, 0.56, 0.82, 0.34))
    pools = report.utilisation
    ratios = [float(u.ratio) for u in pools]
    bars = ax.bar([u.pool for u in pools], [r * 100 for r in ratios], color="tab:green")
    ax.set_ylim(0, percent_axis(max(ratios, default=0) * 100))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: labels.percent(v / 100, locale, 0)))
    ax.bar_label(bars, labels=[labels.percent(r, locale) for r in ratios], fontsize=8)
    ax.set_ylabel(gettext(locale, N_("Allocated share of the pool's card-hours")))
    ax.set_title(gettext(locale, N_("Pool utilisation")))
    if not pools:
        ax.text(
            0.5,
            0.5,
            gettext(locale, N_("Pool sizes were not known for this report.")),
            transform=ax.transAxes,
            ha="center",
            color="0.4",
        )


#: the tops a utilisation axis may have, in percent
_STEPS = (1, 2, 5, 10, 20, 50, 100)


def percent_axis(top: float) -> float:
    """Where a utilisation axis ends: from 0 always (never around zero), to 100 % when nothing
    was used or much was, else to the first of 1, 2, 5 … % that leaves room over the highest
    bar, so that a little use is still seen (each bar is labelled with its value)."""
    if top <= 0:
        return 100.0
    return float(next((s for s in _STEPS if s >= top * 1.15), 100))


def _top_users(fig: Any, report: Report, locale: str | None) -> None:
    ax = fig.add_axes((0.22, 0.07, 0.72, 0.38))
    users: Sequence[Line] = report.top_users
    hours = [float(u.card_hours) for u in users]
    bars = ax.barh([u.key for u in users], hours, color="tab:purple")
    ax.invert_yaxis()
    ax.bar_label(bars, labels=[labels.number(h, locale) for h in hours], fontsize=7, padding=2)
    ax.set_title(gettext(locale, N_("Top users (card-hours)")))
    _hours_axis(ax, max(hours, default=0), locale)
    if not users:
        _empty(ax, locale)


def _pages(report: Report, locale: str | None, brand: Brand) -> Iterator[Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=A4)
    _heading(fig, report, locale, brand)
    _table(fig, report, locale)
    _card_hours(fig, report, locale)
    yield fig
    fig = Figure(figsize=A4)
    _heading(fig, report, locale, brand)
    _utilisation(fig, report, locale)
    _top_users(fig, report, locale)
    yield fig


def to_pdf(report: Report, locale: str | None = None, brand: Brand | None = None) -> bytes:
    """Page 1: the table and a card-hour chart; page 2: pool utilisation and top users."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    brand = brand or Brand()
    fonts = families(locale)
    buf = io.BytesIO()
    # Type 3 fonts: subsets of any outline kind (Noto CJK is CFF), with a Unicode map
    with matplotlib.rc_context({"font.family": fonts, "pdf.fonttype": 3}):
        meta = {"Title": title(report, locale), "Creator": brand.name, "Producer": "AIPool"}
        with PdfPages(buf, metadata=meta) as pdf:
            for fig in _pages(report, locale, brand):
                pdf.savefig(fig)
    return buf.getvalue()
