"""The labelling list says how far each task is in words ("2 of 3 done") with a bar, in both
languages; the canvas and upload scripts show no text of their own: every word they show
comes from the page, in the reader's language."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from portal.labelling import pages as labelling_pages
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_datasets import configure, make_dataset, png, upload
from tests.unit.portal.test_model_pages import client_of, error_on
from tests.unit.portal.test_pages import csrf_of

STATIC = Path(labelling_pages.__file__).resolve().parent.parent / "static"


@pytest.fixture
def store(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure(env, tmp_path, monkeypatch)


def make_task(env: Env, name: str, images: int) -> tuple[int, list[int]]:
    ds = make_dataset(env, "alice", "nlp", name=name, visibility="project")
    upload(env, "alice", ds, {f"{i}.png": png() for i in range(images)})
    version = env.api("alice").get(f"/api/v1/datasets/{ds}/versions/1").json["id"]
    nlp = env.world.projects["nlp"]
    labels = env.api("erin").post(
        "/api/v1/labelling/label-sets",
        json={"project_id": nlp, "name": name, "labels": ["猫", "狗"]},
    )
    assert labels.status_code == 201, labels.json  # labels in Chinese are labels too
    task = env.api("erin").post(
        "/api/v1/labelling/tasks",
        json={"project_id": nlp, "name": name, "dataset_version_id": version,
              "label_set_id": labels.json["id"]},
    ).json  # fmt: skip
    items = env.api("erin").get(f"/api/v1/labelling/tasks/{task['id']}/items").json
    return task["id"], [i["id"] for i in items]


def annotate(env: Env, task: int, item: int) -> None:
    shape = {"kind": "class", "label": "猫", "points": []}
    r = env.api("alice").put(
        f"/api/v1/labelling/tasks/{task}/items/{item}", json={"annotations": [shape]}
    )
    assert r.status_code == 200, r.json


def row_of(html: str, name: str) -> str:
    start = html.index(f">{name}</a>")
    return html[start : html.index("</tr>", start)]


def test_progress_reads_n_of_m_done(env: Env, store: Path) -> None:
    make_task(env, "two", 2)
    three, items3 = make_task(env, "three", 3)
    for item in items3[:2]:
        annotate(env, three, item)
    r = env.api("erin").post(
        f"/api/v1/labelling/tasks/{three}/items/{items3[0]}/review", json={"decision": "accept"}
    )
    assert r.status_code == 200
    en = client_of(env, "alice", "en").get("/labelling").get_data(as_text=True)
    assert "0 of 2 done" in row_of(en, "two")
    assert '<progress max="2" value="0"' in row_of(en, "two")
    assert "2 of 3 done" in row_of(en, "three")
    assert '<progress max="3" value="2"' in row_of(en, "three")
    assert "1 of 3 accepted" in row_of(en, "three")
    zh = client_of(env, "alice", "zh").get("/labelling").get_data(as_text=True)
    assert "已完成 0 / 2" in row_of(zh, "two")
    assert "已完成 2 / 3" in row_of(zh, "three")
    assert "已通过 1 / 3" in row_of(zh, "three")
    assert 'aria-label="已完成 2 / 3"' in row_of(zh, "three")  # the bar is named too
    page = client_of(env, "alice", "zh").get(f"/labelling/tasks/{three}").get_data(as_text=True)
    assert "未标注：1 · 已标注：1 · 已通过：1 · 已驳回：0" in page
    assert ">已通过</td>" in page  # the items' states in words


# ------------------------------------------------------------------ the scripts' texts
# the string literals the scripts may hold: names of events, keys, tools, CSS selectors,
# colours and the like, which a person never reads
TECHNICAL = {
    "use strict", "labeller", "canvas", "2d", "shapes", "message", "labelling-i18n",
    "upload-i18n", "bbox", "polygon", "point", "class", "same-origin", "Content-Type",
    "application/json", "X-CSRFToken", "GET", "PUT", "POST", "error", "string", "object",
    "active", "li", "button", "aria-label", "click", "mousedown", "mousemove", "mouseup",
    "dblclick", "keydown", "load", "progress", "percent", "status", "save", "next", "accept",
    "reject", "[data-tool]", "[data-label]", "form[data-upload]", "input[type=file]",
    "button[type=submit]", ".upload-status", "submit", "13px sans-serif", "Enter", "Escape",
    "b", "p", "k", "c", "z", "s", "n", "a", "r", "1", "9",
    "#e53935", "#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00acc1", "#6d4c41", "#d81b60",
    "#7cb342", "#fff",
}  # fmt: skip
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_LITERAL = re.compile(r""""((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`""")
_KEYS = re.compile(r"\bT\.(\w+)")


def literals(script: str) -> set[str]:
    code = _COMMENTS.sub("", script)
    return {next(g for g in m.groups() if g is not None) for m in _LITERAL.finditer(code)}


@pytest.mark.parametrize("name", ["labelling.js", "upload.js"])
def test_the_scripts_hold_no_text_a_person_reads(name: str) -> None:
    script = (STATIC / name).read_text()
    shown = [s for s in literals(script) if re.search(r"[A-Za-z]{2,}", s) and s not in TECHNICAL]
    assert shown == [], f"{name} shows text that is not from the page: {shown}"
    assert _KEYS.findall(script), f"{name} reads its texts from the page (T.…)"


def test_the_canvas_gets_every_text_it_uses_in_the_readers_language(env: Env, store: Path) -> None:
    task, items = make_task(env, "pets", 1)
    used = set(_KEYS.findall((STATIC / "labelling.js").read_text()))
    url = f"/labelling/tasks/{task}/items/{items[0]}"
    texts = {}
    for lang in ("en", "zh"):
        html = client_of(env, "alice", lang).get(url).get_data(as_text=True)
        m = re.search(r'<script type="application/json" id="labelling-i18n">(.*?)</script>', html)
        assert m, "the page carries the canvas's texts"
        texts[lang] = json.loads(m.group(1))
        assert used <= set(texts[lang]), used - set(texts[lang])
    assert texts["en"]["reject_why"] == "Why is it rejected?"
    assert texts["zh"]["reject_why"] == "驳回的原因是什么？"
    assert texts["zh"]["shapes"]["bbox"] == "矩形框"
    assert texts["zh"]["statuses"]["new"] == "未标注"
    for key in used:  # every text differs in Chinese, and is Chinese
        en, zh = json.dumps(texts["en"][key]), json.dumps(texts["zh"][key], ensure_ascii=False)
        assert en != zh, key
        assert re.search(r"[\u4e00-\u9fff]", zh), key


# ------------------------------------------------------------------ the managers' forms
def label_sets(env: Env) -> list[tuple[str, list[str]]]:
    rows = env.api("admin").get("/api/v1/labelling/label-sets").json
    return [(s["name"], s["labels"]) for s in rows]


@pytest.mark.parametrize(
    ("lang", "made", "rule"),
    [
        ("en", "Labels (separated by commas)", "A letter or digit, then"),
        ("zh", "标签（以逗号分隔）", "以字母或数字开头"),
    ],
)
def test_label_set_form(env: Env, store: Path, lang: str, made: str, rule: str) -> None:
    erin = client_of(env, "erin", lang)  # a domain admin: manages nlp
    page = erin.get("/labelling").get_data(as_text=True)
    assert made in page
    nlp = env.world.projects["nlp"]
    form = {"set-project_id": nlp, "set-name": "animals", "set-labels": "猫，狗、bird",
            "set-csrf_token": csrf_of(page)}  # fmt: skip
    assert erin.post("/labelling", data=form).status_code == 302
    assert label_sets(env) == [("animals", ["猫", "狗", "bird"])]
    # a label that would name a file elsewhere is refused on the field, nothing made
    r = erin.post("/labelling", data={**form, "set-name": "bad", "set-labels": "../../x, y"})
    assert r.status_code == 422
    assert rule in error_on(r.get_data(as_text=True), "set-labels")
    # another tenant's admin has no nlp to choose: refused, nothing made
    tina = client_of(env, "tina", lang)
    page = tina.get("/labelling").get_data(as_text=True)
    theirs = {**form, "set-name": "theirs", "set-csrf_token": csrf_of(page)}
    r = tina.post("/labelling", data=theirs)
    assert r.status_code == 422
    assert 'class="error"' in error_on(r.get_data(as_text=True), "set-project_id")
    assert label_sets(env) == [("animals", ["猫", "狗", "bird"])]
