"""Names shown as text, from a table of hostile strings: Streamlit Markdown (``dashboard.literal.markdown``),
Plotly text, shell words, and the CLI's output with control characters made visible
(``kpulse.printable``). The rendering in a real browser is in test_dashboard_hostile_names.py."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from dashboard.literal import MARKDOWN_SPECIAL, NO_BREAK_SPACE, WORD_JOINER, html_text, markdown, shell
from kpulse.printable import VisibleStream, visible, visible_output

HOSTILE = [
    "demo-slow",
    "**[Click here to re-authenticate](https://example.invalid/login)**",
    "![x](https://example.invalid/x.png)",
    '<img src=https://example.invalid/x.png> <script>alert(1)</script> <a href="https://e.invalid">a</a>',
    "# heading #",
    "name #",
    "## ",
    "- item",
    "+ item",
    "---",
    "1. first",
    "12) twelfth",
    "> quote",
    "    indented code",
    "a  b   ",
    "`code` ``x``",
    "_em_ __strong__ *em* ~~gone~~",
    "_kp-hostile.__strong__._em_-",
    ":material/warning: :material_warning: :streamlit: :smile: :+1:",
    ":red[x] :blue-background[y] :small[z] :help[h]{x=1}",
    "$x^2$ $$y$$ \\$",
    "a -- b -> c <- d <-> e >= f <= g ~= h",
    "www.example.invalid WWW.EXAMPLE.INVALID https://example.invalid mailto:me@example.invalid me@example.invalid",
    "&lt;b&gt; &amp; &#60;",
    "| a | b |",
    "[ref]: https://example.invalid",
    "x; touch pwned; $(touch pwned) `touch pwned` \\ ' \"",
    "ctl\x1b[31mred\x07\r\nnext\x9b\u202eevil\x00\x7f\t",
    "",
]
STREAMLIT_REWRITES = {
    # the text rewrites Streamlit's Markdown renderer applies after parsing (static/js/StreamlitMarkdown.*.js)
    "material icon": re.compile(r":material[/_](\w+):"),
    "streamlit logo": re.compile(r":streamlit:"),
    "emoji": re.compile(r":\+1:|:-1:|:[\w-]+:"),
    "typography": re.compile(r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)"),
    "web address": re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I),
    "e-mail address": re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)"),
}


def parsed_text(escaped: str) -> str:
    """The text a CommonMark parser makes of ``escaped`` when every special character is escaped:
    each backslash escape gives the character it escapes."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", escaped)


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_escapes_every_special_character_and_reads_back_as_the_name(name):
    escaped = markdown(name)
    unescaped = re.sub(r"\\[!-/:-@\[-`{-~]", "", escaped)
    assert not set(unescaped) & MARKDOWN_SPECIAL, escaped
    assert not re.match(r"[ \t]|-|\d+[.)]", escaped), "nothing that starts a list, rule or code block"
    shown = parsed_text(escaped).replace(WORD_JOINER, "").replace(NO_BREAK_SPACE, " ")
    assert shown == visible(name)


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_leaves_nothing_for_streamlit_to_rewrite(name):
    text = parsed_text(markdown(name))
    found = {what: pattern.findall(text) for what, pattern in STREAMLIT_REWRITES.items() if pattern.search(text)}
    assert found == {}
    assert ":material/" not in markdown(name)  # Streamlit replaces this one in the source, before parsing


@pytest.mark.parametrize("name, shown", [
    ("demo-slow", "demo-slow"),
    ("name #", "name \\#"),
    ("**x**", "\\*\\*x\\*\\*"),
    ("- x", "\\- x"),
    ("1. x", "1\\. x"),
    (" a  b ", f"{NO_BREAK_SPACE}a{NO_BREAK_SPACE * 2}b{NO_BREAK_SPACE}"),
    (":smile:", f"\\:{WORD_JOINER}smile\\:"),
    ("a -- b", f"a -{WORD_JOINER}- b"),
    ("x\x1b[2J\n", "x\\\\x1b\\[2J\\\\n"),
])
def test_markdown_examples(name, shown):
    assert markdown(name) == shown


def test_html_and_plotly_text_shows_tags_as_text():
    shown = html_text('<a href="https://e.invalid">x</a> <b>&</b>\n')
    assert shown == '&lt;a href="https://e.invalid"&gt;x&lt;/a&gt; &lt;b&gt;&amp;&lt;/b&gt;\\n'


@pytest.mark.parametrize("name", HOSTILE)
def test_a_shell_word_is_exactly_the_name_to_bash_and_runs_nothing(name, tmp_path):
    if "\x00" in name:  # no command-line argument can hold a NUL byte
        name = name.replace("\x00", "")
    word = shell(name)
    assert not CONTROL_RAW.search(word)
    result = subprocess.run(["bash", "-c", f"printf '%s' {word}"], cwd=tmp_path, capture_output=True, timeout=10)
    assert result.stdout.decode() == name
    assert not list(tmp_path.iterdir())


CONTROL_RAW = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("text, shown", [
    ("plain text\n\twith a tab", "plain text\n\twith a tab"),
    ("\x1b]0;title\x07\x1b[2J", "\\x1b]0;title\\x07\\x1b[2J"),
    ("cr\rover", "cr\\rover"),
    ("del\x7f c1\x9b nul\x00", "del\\x7f c1\\x9b nul\\x00"),
    ("\u202eevil\u2066 \u200f", "\\u202eevil\\u2066 \\u200f"),
    ("back\\slash and ünïcödé ✓", "back\\slash and ünïcödé ✓"),
])
def test_the_cli_writer_escapes_control_characters_but_newline_and_tab(text, shown):
    out = io.StringIO()
    assert VisibleStream(out).write(text) == len(text)
    assert out.getvalue() == shown
    assert visible(text, keep="\n\t") == shown


def test_visible_output_wraps_stdout_and_stderr_and_restores_them():
    before = sys.stdout, sys.stderr
    with visible_output():
        assert isinstance(sys.stdout, VisibleStream) and isinstance(sys.stderr, VisibleStream)
    assert (sys.stdout, sys.stderr) == before
