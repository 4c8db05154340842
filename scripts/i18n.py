"""The message catalogue (translations/): extract, update, compile, check, and fill in.

    python scripts/i18n.py update          # extract from the sources; new messages in .po
    python scripts/i18n.py compile         # .po -> .mo (committed beside the .po)
    python scripts/i18n.py check           # exit 1 if anything is untranslated, fuzzy,
                                           # missing from the catalogue or not compiled
    python scripts/i18n.py todo            # untranslated messages as JSON {msgid: ""}
    python scripts/i18n.py fill FILE.json  # set translations from {msgid: msgstr}

Extraction follows babel.cfg at the top of the tree, with the keywords the code uses:
``_``, ``gettext``, ``ngettext``, ``lazy_gettext``, ``_l``, ``N_`` and ``pgettext``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

TOP = Path(__file__).resolve().parent.parent
CATALOGUES = TOP / "translations"
# the catalogues, by Babel's full name of the locale (zh_CN is zh_Hans_CN to Babel: the script
# is part of the name it looks for)
LOCALES = ("zh_Hans_CN",)
KEYWORDS = {
    "_": None,
    "gettext": None,
    "ngettext": (1, 2),
    "lazy_gettext": None,
    "_l": None,
    "N_": None,
    "lazy_ngettext": (1, 2),
    "pgettext": ((1, "c"), 2),
}


def po_path(locale: str) -> Path:
    return CATALOGUES / locale / "LC_MESSAGES" / "messages.po"


def extract() -> Catalog:
    """Every marked message of the sources babel.cfg names, with where it is used."""
    with open(TOP / "babel.cfg", encoding="utf-8") as f:
        method_map, options_map = parse_mapping_cfg(f)
    catalog = Catalog(project="AIPool", charset="utf-8")
    found = extract_from_dir(
        str(TOP),
        method_map,
        options_map,
        keywords=KEYWORDS,
        comment_tags=("TRANSLATORS:",),
        strip_comment_tags=True,
    )
    for filename, lineno, message, comments, context in found:
        catalog.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return catalog


def read(locale: str) -> Catalog:
    path = po_path(locale)
    if not path.exists():
        return Catalog(locale=locale, project="AIPool", charset="utf-8")
    with open(path, "rb") as f:
        return read_po(f, locale=locale)


def _header(catalog: Catalog) -> None:
    """A header that says what the file is, not Babel's placeholders."""
    catalog.fuzzy = False
    catalog.project, catalog.version = "AIPool", "1"
    catalog.copyright_holder = "AIPool"
    catalog.msgid_bugs_address = ""
    catalog.last_translator = "AIPool"
    catalog.language_team = "AIPool zh_CN"
    catalog.header_comment = (
        "# Simplified Chinese messages of AIPool (docs/i18n.md; terms: docs/glossary.md).\n"
        "# Kept by scripts/i18n.py: update, fill, compile, check."
    )


def write(locale: str, catalog: Catalog) -> None:
    _header(catalog)
    path = po_path(locale)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    write_po(buf, catalog, width=100, omit_header=False, sort_output=True, include_lineno=False)
    path.write_bytes(buf.getvalue())


def update() -> None:
    template = extract()
    for locale in LOCALES:
        catalog = read(locale)
        catalog.update(template, no_fuzzy_matching=True, update_creation_date=False)
        catalog.obsolete.clear()  # messages no source uses any more
        write(locale, catalog)
        todo = sum(1 for m in catalog if m.id and not _done(m))
        print(f"{po_path(locale).relative_to(TOP)}: {len(catalog) - 1} messages, {todo} to do")


def compile_() -> None:
    for locale in LOCALES:
        catalog = read(locale)
        with open(po_path(locale).with_suffix(".mo"), "wb") as f:
            write_mo(f, catalog, use_fuzzy=False)


def _done(message: object) -> bool:
    string = getattr(message, "string", None)
    fuzzy = getattr(message, "fuzzy", False)
    if isinstance(string, tuple | list):
        return all(string) and not fuzzy
    return bool(string) and not fuzzy


def problems() -> list[str]:
    """What keeps the catalogue from being complete, one line each."""
    out: list[str] = []
    wanted = {(m.id if isinstance(m.id, str) else m.id[0], m.context) for m in extract() if m.id}
    for locale in LOCALES:
        catalog = read(locale)
        have = {(m.id if isinstance(m.id, str) else m.id[0], m.context) for m in catalog if m.id}
        for msgid, _ctx in sorted(wanted - have, key=str):
            out.append(f"{locale}: not in the catalogue (run update): {msgid!r}")
        for msgid, _ctx in sorted(have - wanted, key=str):
            out.append(f"{locale}: no source uses it (run update): {msgid!r}")
        for m in catalog:
            if m.id and m.fuzzy:
                out.append(f"{locale}: fuzzy: {m.id!r}")
            elif m.id and not _done(m):
                out.append(f"{locale}: untranslated: {m.id!r}")
            elif m.id and m.check(catalog):
                errs = "; ".join(str(e) for e in m.check(catalog))
                out.append(f"{locale}: {m.id!r}: {errs}")
        out += _stale_mo(locale, catalog)
    return out + template_text()


# ---------------------------------------------------------------- templates
TEMPLATES = (TOP / "portal" / "templates",)
# words that read the same in every language the portal speaks (names, units, formats)
SAME_IN_EVERY_LANGUAGE = frozenset(
    [
        "AIPool",
        "GPU",
        "GPUs",
        "NPU",
        "NPUs",
        "vNPU",
        "vNPUs",
        "CPU",
        "CPUs",
        "API",
        "CSV",
        "XLSX",
        "PDF",
        "YAML",
        "JSON",
        "Slurm",
        "QOS",
        "ID",
        "URL",
        "S3",
        "COCO",
        "YOLO",
        "VOC",
        "Jupyter",
        "JupyterLab",
        "MiB",
        "GiB",
        "MB",
        "GB",
        "TB",
        "UTC",
        "CNY",
        "HTTP",
        "HTTPS",
        "ACC",
        "F1",
        "P",
        "R",
        "mAP",
        "mIoU",
        "BLEU",
        "ROUGE",
        "PSNR",
        "SSIM",
        "IoU",
        "SHA256",
        "sha256",
        "Ascend",
        "NVIDIA",
        "A100",
        "910B",
        "x",
        "v",
    ]
)
_COMMENT = re.compile(r"{#.*?#}", re.S)
_TRANS = re.compile(r"{%-?\s*trans\b.*?{%-?\s*endtrans\s*-?%}", re.S)
_EXPR = re.compile(r"{{.*?}}|{%.*?%}", re.S)
_LITERAL = re.compile(r"""(?<![\w.])(?:"([^"\\]*)"|'([^'\\]*)')""")
_CALL = re.compile(r"\b(?:_|gettext|ngettext|pgettext)\(\s*(?:\"[^\"]*\"|'[^']*')")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\u2019-]*")
_SHOWN_ATTRS = frozenset({"title", "placeholder", "alt", "aria-label", "label"})


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w not in SAME_IN_EVERY_LANGUAGE]


def _prose(literal: str) -> bool:
    """A string literal in a template expression that a person would read: a capitalised
    word or words with spaces (not an endpoint, a class name, a format or a key)."""
    if not _WORD.search(literal) or "%" in literal or "{" in literal:
        return False
    words = _words(literal)
    return bool(words) and (
        " " in literal.strip()
        or (literal[:1].isupper() and len(words[0]) > 1 and literal[1:2].islower())
    )


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        kind = dict(attrs).get("type") or ""
        for name, value in attrs:
            shown = name in _SHOWN_ATTRS or (name == "value" and kind in ("submit", "button"))
            if shown and value and _words(value):
                self.found.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and _words(data):
            self.found.append(data.strip())


def untranslated_in(source: str) -> list[str]:
    """Text of a Jinja template that a person reads but no catalogue holds."""
    source = _COMMENT.sub(" ", source)
    source = _TRANS.sub(" ", source)
    found = []
    for expr in _EXPR.findall(source):
        rest = _CALL.sub("", expr)  # literals inside _("…") are the catalogue's
        for a, b in _LITERAL.findall(rest):
            if _prose(a or b):
                found.append(a or b)
    parser = _Text()
    parser.feed(_EXPR.sub(" ", source))
    return found + parser.found


def template_text() -> list[str]:
    out = []
    for root in TEMPLATES:
        for path in sorted(root.rglob("*.html")):
            for text in untranslated_in(path.read_text(encoding="utf-8")):
                out.append(f"{path.relative_to(TOP)}: text outside the catalogue: {text!r}")
    return out


def _stale_mo(locale: str, catalog: Catalog) -> list[str]:
    mo = po_path(locale).with_suffix(".mo")
    if not mo.exists():
        return [f"{locale}: {mo.name} missing (run compile)"]
    with open(mo, "rb") as f:
        compiled = read_mo(f)
    want = {(_key(m.id), _key(m.string)) for m in catalog if m.id and _done(m)}
    got = {(_key(m.id), _key(m.string)) for m in compiled if m.id}
    return [] if want == got else [f"{locale}: {mo.name} does not match the .po (run compile)"]


def _key(value: object) -> object:
    """A message's id or text as a set member: plural forms come as lists."""
    return tuple(value) if isinstance(value, list | tuple) else value


def todo() -> dict[str, str]:
    out: dict[str, str] = {}
    for locale in LOCALES:
        for m in read(locale):
            if m.id and not _done(m):
                out[m.id if isinstance(m.id, str) else m.id[0]] = ""
    return out


def fill(pairs: dict[str, str | list[str]], locale: str = "zh_Hans_CN") -> list[str]:
    """Set translations; returns the msgids that are not in the catalogue."""
    catalog = read(locale)
    unknown = []
    by_first = {(m.id if isinstance(m.id, str) else m.id[0]): m for m in catalog if m.id}
    for msgid, text in pairs.items():
        m = by_first.get(msgid)
        if m is None:
            unknown.append(msgid)
            continue
        if isinstance(m.id, tuple | list):
            forms = text if isinstance(text, list) else [text]
            m.string = tuple(forms[: catalog.num_plurals] or [""])
        else:
            m.string = text if isinstance(text, str) else text[0]
        m.flags.discard("fuzzy")
    write(locale, catalog)
    return unknown


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "compile", "check", "todo", "fill"])
    parser.add_argument("file", nargs="?", help="fill: a JSON object {msgid: msgstr}")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "update":
        update()
    elif args.command == "compile":
        compile_()
    elif args.command == "todo":
        json.dump(todo(), sys.stdout, ensure_ascii=False, indent=1)
        print()
    elif args.command == "fill":
        if not args.file:
            parser.error("fill needs a JSON file")
        pairs = json.loads(Path(args.file).read_text(encoding="utf-8"))
        unknown = fill(pairs)
        for msgid in unknown:
            print(f"not in the catalogue: {msgid!r}", file=sys.stderr)
        compile_()
        return 1 if unknown else 0
    else:
        found = problems()
        for line in found:
            print(line)
        print(f"i18n check: {len(found)} problems")
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
