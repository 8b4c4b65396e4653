"""The one error of the config package, and how key paths are spelled in its messages."""

from __future__ import annotations

import re

from kpulse.errors import KpulseError

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


class ConfigError(KpulseError):
    """The configuration cannot be used. ``str(error)`` is one line that starts with the key path,
    e.g. ``clusters[0].security.sasl_mechanism: required when protocol is SASL_SSL``.

    ``source`` is the file (or other origin) being loaded when :func:`load_config` knows it, so a
    command line can print ``f"{error.source}: {error}"``; it is ``None`` otherwise.
    """

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.source = source


def child_path(parent: str, key: object) -> str:
    """The path of ``key`` inside ``parent``: ``a.b``, ``a[0]`` for list items and integer keys,
    ``a["my.group"]`` for keys that are not plain words (consumer group ids)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    text = str(key)
    if _PLAIN_KEY.match(text):
        return f"{parent}.{text}" if parent else text
    return f'{parent}["{text}"]'
