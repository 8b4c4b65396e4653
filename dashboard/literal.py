"""Strings kpulse does not control (topic, group, application, client and member ids, hosts,
config values, audit actors and errors, alert labels, what a user typed) shown as exactly
themselves: in Streamlit Markdown (:func:`markdown`), in HTML and Plotly text (:func:`html_text`)
and on a shell command line (:func:`shell`). Pure: no Streamlit here.

Streamlit renders every body, label and help text as Markdown, and after parsing it rewrites the
text itself: ``:material/name:`` and ``:streamlit:`` become icons, ``:name:`` emoji, ``--`` and
``->`` typographic dashes and arrows, and web and e-mail addresses links. A backslash escape
stops the parser but not those rewrites, so :func:`markdown` also puts an invisible word joiner
(U+2060) where one would start.
"""

from __future__ import annotations

import html
import re
import shlex

from kpulse.printable import CONTROL, escape, visible  # visible: for select boxes, which show plain text

WORD_JOINER = "\u2060"
NO_BREAK_SPACE = "\u00a0"
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()<>#!|~$:&+=")
"""Backslash-escaped everywhere: emphasis, code, links and images, HTML and entities, headings,
tables, strikethrough, math, Streamlit's ``:color[...]`` directives, list markers."""
_REWRITES = re.compile(
    r"(?<=:)(?=[\w+/-])"  # :material/x:, :streamlit:, :emoji:, https://, mailto:
    r"|(?i:(?<=www))(?=\.)"  # www.example.com
    r"|(?<=@)(?=[\w-])"  # me@example.com
    r"|(?<=(?<!\S)[<\-~>])(?=(?:->|-|>|=)(?!\S))"  # <->, ->, <-, --, >=, <=, ~= between spaces
)
_LINE_START = re.compile(r"^(?:-|\d+(?=[.)]))")
"""A list marker or thematic break where the text starts a line: ``- x``, ``---``, ``1. x``."""
_SPACES = re.compile(r"^ +| +$| {2,}")


def markdown(text: object) -> str:
    """Markdown that Streamlit shows as exactly ``str(text)``, control characters as escapes
    (``\\x1b``); spaces Markdown would drop or fold kept as no-break spaces."""
    shown = _REWRITES.sub(WORD_JOINER, visible(str(text)))
    shown = "".join("\\" + char if char in MARKDOWN_SPECIAL else char for char in shown)
    shown = _LINE_START.sub(lambda match: match[0] + "\\" if match[0][0].isdigit() else "\\-", shown)
    return _SPACES.sub(lambda match: NO_BREAK_SPACE * len(match[0]), shown)


def html_text(text: object) -> str:
    """Text that HTML, and a Plotly title, legend, axis or hover label, shows as exactly ``str(text)``
    (Plotly reads ``<a href>``, ``<b>``, ``<br>`` and entities in them)."""
    return html.escape(visible(str(text)), quote=False)


def shell(text: str) -> str:
    """``text`` as one shell word: single-quoted when needed (``shlex.quote``); with control
    characters, as bash's ``$'...'`` with each one escaped, so it is seen and copied exactly."""
    if not CONTROL.search(text):
        return shlex.quote(text)
    return "$'" + "".join(_shell_escape(char) for char in text) + "'"


def _shell_escape(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if not CONTROL.match(char):
        return char
    return escape(char) if ord(char) < 0x80 else f"\\u{ord(char):04x}"  # $'\x9b' would be one raw byte
