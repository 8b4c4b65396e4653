"""Text from outside kpulse (topic and group names, audit rows, broker errors) made safe to show:
every control character becomes a visible escape, so a name cannot move the terminal's cursor,
recolour or clear it, set its title, reverse the text around it, or break a row in two.

The CLI writes all its output through :func:`visible_output` (newline and tab kept, as its own
lines need them); the dashboard shows names through :mod:`dashboard.literal`, which keeps none.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from typing import Any, TextIO
from collections.abc import Iterable, Iterator

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""C0 controls, DEL, C1 controls, and the marks, embeddings, overrides and isolates that change the
direction of the text around them ("Trojan Source")."""
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(char: str) -> str:
    """One control character as Python writes it in a string literal: ``\\n``, ``\\x1b``, ``\\u202e``."""
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: str, keep: str = "") -> str:
    """``text`` with every :data:`CONTROL` character, except those in ``keep``, written as its
    :func:`escape`. Everything else (backslashes included) is left as it is."""
    return CONTROL.sub(lambda match: match[0] if match[0] in keep else escape(match[0]), text)


class VisibleStream:
    """A text stream writing to ``stream`` with control characters made visible, newline and tab
    kept; anything else (flush, isatty, encoding, fileno) is the wrapped stream's."""

    KEEP = "\n\t"

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(visible(text, self.KEEP))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


@contextmanager
def visible_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`VisibleStream` while the block runs."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleStream(out), VisibleStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
