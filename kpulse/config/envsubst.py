"""``${VAR}`` substitution in configuration strings, so secrets stay out of the file.

Applied to each string value after YAML parsing (never to raw text, so a variable's value cannot
inject YAML):

- ``${VAR}``: the value of ``VAR``; an error naming the key path when ``VAR`` is unset;
- ``${VAR:-default}``: the value of ``VAR``, or ``default`` when ``VAR`` is unset or empty
  (shell semantics);
- ``$${...}``: the literal text ``${...}``; any other ``$`` is kept as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kpulse.config.errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def has_reference(text: str) -> bool:
    """Whether ``text`` would be changed by :func:`substitute`."""
    return "${" in text


def substitute(text: str, key_path: str, environ: Mapping[str, str]) -> str:
    """``text`` with every ``${...}`` replaced; ``key_path`` is only used in error messages."""
    pieces: list[str] = []
    position = 0
    while (dollar := text.find("$", position)) >= 0:
        pieces.append(text[position:dollar])
        escaped = text.startswith("$${", dollar)
        if not escaped and not text.startswith("${", dollar):
            pieces.append("$")
            position = dollar + 1
            continue
        opening = dollar + (2 if escaped else 1)
        closing = text.find("}", opening)
        if closing < 0:
            raise ConfigError(f"{key_path}: unclosed '${{' in {text[dollar:]!r}")
        if escaped:
            pieces.append(text[dollar + 1 : closing + 1])
        else:
            pieces.append(_lookup(text[opening + 1 : closing], key_path, environ))
        position = closing + 1
    pieces.append(text[position:])
    return "".join(pieces)


def _lookup(expression: str, key_path: str, environ: Mapping[str, str]) -> str:
    name, has_default, default = expression.partition(":-")
    if not _NAME.match(name):
        raise ConfigError(
            f"{key_path}: invalid variable reference '${{{expression}}}' "
            "(expected ${NAME} or ${NAME:-default})"
        )
    if has_default:
        return environ.get(name) or default
    if name not in environ:
        raise ConfigError(
            f"{key_path}: environment variable {name} is not set "
            f"(write ${{{name}:-default}} to give it a default)"
        )
    return environ[name]
