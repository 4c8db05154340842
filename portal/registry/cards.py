"""Model cards: Markdown with a YAML header (Hugging Face / ModelScope style), checked and
rendered safely.

A card whose Markdown carries active content (``<script>``, ``<iframe>``, event handlers,
``javascript:`` links, …) is refused with what was found; what is shown is rendered by
markdown-it and then cleaned by nh3 (Ammonia), so even an accepted card cannot run code.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import nh3
import yaml
from markdown_it import MarkdownIt

from portal.errors import ValidationFailed
from portal.i18n import gettext

MAX_CARD = 256 * 1024
ACTIVE_TAGS = frozenset(
    {
        "script",
        "iframe",
        "object",
        "embed",
        "style",
        "frame",
        "frameset",
        "applet",
        "base",
        "form",
        "meta",
        "link",
        "svg",
        "math",
    }
)
_URL_ATTRS = frozenset({"href", "src", "action", "formaction", "xlink:href", "data"})
_md = MarkdownIt("commonmark", {"html": True}).enable("table")


@dataclass(frozen=True)
class Card:
    meta: dict[str, Any]
    body: str


class _ActiveContent(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ACTIVE_TAGS:
            self.found.append(f"<{tag}> tag")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{name} attribute on <{tag}>")
            elif name in _URL_ATTRS and value:
                scheme = "".join(value.split()).lower()
                if scheme.startswith(("javascript:", "vbscript:", "data:text/html")):
                    self.found.append(f"{scheme.split(':')[0]}: URL in <{tag} {name}>")

    handle_startendtag = handle_starttag


def split(text: str) -> Card:
    """The YAML header (between ``---`` lines at the top) and the Markdown body."""
    if len(text.encode()) > MAX_CARD:
        message = gettext("A model card has at most %(n)d KiB.", n=MAX_CARD // 1024)
        raise ValidationFailed({"card": [message]})
    if "\x00" in text:
        raise ValidationFailed({"card": [gettext("NUL characters are not allowed.")]})
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return Card({}, text)
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in ("---", "...")), None)
    if end is None:
        message = gettext("The YAML header starts with --- but never ends.")
        raise ValidationFailed({"card": [message]})
    try:
        meta = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        message = gettext("The YAML header does not parse: %(reason)s", reason=exc)
        raise ValidationFailed({"card": [message]}) from None
    if not isinstance(meta, dict):
        message = gettext("The YAML header must be a mapping (key: value lines).")
        raise ValidationFailed({"card": [message]})
    return Card(_plain(meta), "".join(lines[end + 1 :]))


def _plain(value: Any) -> Any:
    """YAML dates and other scalars as JSON-storable values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def check(text: str) -> Card:
    """Parse a card and refuse active content, naming it."""
    card = split(text)
    parser = _ActiveContent()
    parser.feed(_md.render(card.body))
    parser.close()
    if parser.found:
        found = ", ".join(dict.fromkeys(parser.found))
        message = gettext("A model card may not contain active content: %(found)s.", found=found)
        raise ValidationFailed({"card": [message]})
    return card


def render(text: str) -> str:
    """Safe HTML of a card's body (the header is shown as a table by the page). The card's
    headings sit one level below the page's own (its ``#`` is an ``<h2>``: a page has one
    ``<h1>``)."""
    tokens = _md.parse(split(text).body)
    for token in tokens:
        if token.type in ("heading_open", "heading_close") and token.tag < "h6":
            token.tag = f"h{int(token.tag[1]) + 1}"
    html = _md.renderer.render(tokens, _md.options, {})
    return nh3.clean(html, link_rel="noopener noreferrer nofollow")


def compose(meta: dict[str, Any], body: str) -> str:
    """A card from its header and body (for presets and imports without a README)."""
    header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).strip()
    return f"---\n{header}\n---\n\n{body.strip()}\n"
