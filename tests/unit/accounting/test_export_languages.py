"""Reports in the reader's language: CSV headers (UTF-8 with a byte order mark) and XLSX
sheets in Chinese, and a Chinese PDF that really draws its Chinese: an embedded CJK font,
text that comes back out, and glyphs that are not the empty boxes of a font without them."""

from __future__ import annotations

import io
import shutil
import subprocess
import warnings
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image
from openpyxl import load_workbook
from sqlalchemy import Engine

from accounting import export, labels, pdf
from accounting.report import Dim, Line, Report, build
from tests.unit.accounting.test_report import NOV, POOLS, filled  # noqa: F401 (fixture)

HEADER_ZH = ["项目", "作业", "GPU 卡时", "NPU 卡时", "CPU 核时", "内存 GiB·时", "平均等待（分钟）"]


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} (poppler-utils) is needed: scripts/bootstrap.sh installs it"
    return path


def test_csv_in_chinese_starts_with_a_byte_order_mark(filled: Engine) -> None:  # noqa: F811
    with filled.connect() as c:
        report = build(c, *NOV, Dim.PROJECT)
    data = export.render(report, "csv", locale="zh_CN")
    assert data.startswith(b"\xef\xbb\xbf")  # what Excel needs to read UTF-8
    lines = data.decode("utf-8-sig").splitlines()
    assert lines[0].split(",") == HEADER_ZH
    assert lines[-1].startswith("合计,4,5.5000,")
    assert export.render(report, "csv", locale="en").decode("utf-8-sig").startswith("Project,")


def test_xlsx_sheets_and_headers_in_chinese(filled: Engine) -> None:  # noqa: F811
    with filled.connect() as c:
        report = build(c, *NOV, Dim.PROJECT, pools=POOLS)
    brand = export.Brand("北大计算中心")
    wb = load_workbook(io.BytesIO(export.to_xlsx(report, "zh_CN", brand)))
    assert wb.sheetnames == ["用量", "资源池利用率", "用户排行"]
    rows = list(wb["用量"].iter_rows(values_only=True))
    assert rows[0][0] == "北大计算中心"
    assert rows[1][0] == "按项目统计的用量，2026/11/1 00:00 至 2026/12/1 00:00（UTC）"
    assert list(rows[2]) == HEADER_ZH
    assert rows[-1][0] == "合计"
    util = list(wb["资源池利用率"].iter_rows(values_only=True))
    assert util[0][0] == "资源池"
    assert util[0][-1] == "已分配卡时占比"
    assert wb["资源池利用率"].cell(2, 6).number_format == "0.00%"
    assert wb["用户排行"].cell(1, 1).value == "用户"


def test_a_report_of_no_use_has_axes_from_zero() -> None:
    assert pdf.percent_axis(0) == 100
    assert pdf.percent_axis(0.095) == 1  # a tenth of a percent is still seen
    assert pdf.percent_axis(4.8) == 10
    assert pdf.percent_axis(97) == 100


def _chinese_report() -> Report:
    def line(key: str, gpu: str) -> Line:
        return Line(key, 2, Decimal(gpu), Decimal(0), Decimal(4), Decimal(1), Decimal("1.5"))

    lines = (line("视觉组", "4.5"), line("nlp", "1"))
    return Report(*NOV, Dim.PROJECT, lines, line("total", "5.5"), (), lines)


def test_the_chinese_pdf_embeds_a_cjk_font_and_its_text_comes_back(tmp_path: Path) -> None:
    out = tmp_path / "report.pdf"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out.write_bytes(export.render(_chinese_report(), "pdf", locale="zh_CN", brand=BRAND))
    assert not [w for w in seen if "missing" in str(w.message)], [str(w.message) for w in seen]
    fonts = subprocess.run(
        [_tool("pdffonts"), str(out)], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()[2:]
    cjk = [f for f in fonts if "CJK" in f.split()[0]]
    assert cjk, fonts
    assert all(f.split()[-5] == "yes" for f in cjk)  # the "emb" column: embedded
    text = subprocess.run(
        [_tool("pdftotext"), str(out), "-"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    for words in ("北大计算中心", "按项目统计的用量", "GPU 卡时", "合计", "视觉组", "用户排行"):
        assert words in text, words
    pages = subprocess.run(
        [_tool("pdftoppm"), "-png", "-r", "30", str(out), str(tmp_path / "page")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert pages.stderr == ""  # poppler draws it without a complaint about its fonts
    assert len(list(tmp_path.glob("page-*.png"))) == 2


BRAND = export.Brand("北大计算中心")


def _drawn(text: str, fonts: list[str], where: Path) -> np.ndarray:
    """``text`` drawn into a PDF with ``fonts`` and rendered back by pdftoppm, as pixels."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.0, 0.6))
    with matplotlib.rc_context({"font.family": fonts, "pdf.fonttype": 3}):
        fig.text(0.1, 0.3, text, fontsize=28)
        with PdfPages(where.with_suffix(".pdf")) as out:
            out.savefig(fig)
    argv = [_tool("pdftoppm"), "-png", "-r", "100", "-singlefile", str(where.with_suffix(".pdf"))]
    subprocess.run([*argv, str(where)], check=True, timeout=60)
    return np.asarray(image.imread(where.with_suffix(".png"))[..., :3])


def test_chinese_glyphs_are_drawn_not_empty_boxes(tmp_path: Path) -> None:
    """Two different characters look different with the report's fonts; a font without
    them (DejaVu alone) draws both as the same empty box, which is what the report avoids."""
    fonts = pdf.families("zh_CN")
    ka, shi = (_drawn(c, fonts, tmp_path / f"noto-{i}") for i, c in enumerate("卡时"))
    assert ka.min() < 0.5  # something dark was drawn
    assert not np.array_equal(ka, shi)
    with pytest.warns(UserWarning, match="missing from font"):
        box_ka = _drawn("卡", ["DejaVu Sans"], tmp_path / "tofu-0")
    with pytest.warns(UserWarning, match="missing from font"):
        box_shi = _drawn("时", ["DejaVu Sans"], tmp_path / "tofu-1")
    assert np.array_equal(box_ka, box_shi)  # the same box for both: "tofu"
    assert not np.array_equal(ka, box_ka)


def test_a_chinese_pdf_without_the_font_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "cjk_family", lambda: None)
    with pytest.raises(export.ExportError, match="fonts-noto-cjk") as refused:
        pdf.to_pdf(_chinese_report(), "zh_CN")
    assert "未安装中文字体" in refused.value.message.render("zh_CN")
    assert pdf.families("en") == ["DejaVu Sans"]  # English still renders (without CJK)


def test_labels_and_money_per_locale() -> None:
    t = datetime(2026, 11, 1, 8, tzinfo=UTC)
    assert labels.money(Decimal("1234.5"), "zh_CN") == "¥1,234.50"
    assert labels.money(Decimal("1234.5"), "en") == "CN¥1,234.50"
    assert labels.month(t, "zh_CN") == "2026年11月"
    assert labels.when(t, "en") == "11/1/2026 08:00"
    assert labels.dim("zh_CN", Dim.GPU_TYPE) == "GPU 型号"
