"""Errors of the operations package; all are one-line :class:`KpulseError` messages."""

from __future__ import annotations

import difflib

from kpulse.errors import KpulseError


class OperationError(KpulseError):
    """An operation cannot be planned or executed; nothing was changed."""

    retriable: bool = False
    """Whether asking again may succeed (the group's coordinator is moving)."""


class BadInput(OperationError):
    """Malformed or unknown input: a datetime, a duration, a group, a topic, a plan file."""


class Refused(OperationError):
    """A precondition does not hold (active group, read-only cluster, concurrent operation, role)."""


class NotAuthorized(Refused):
    """The actor's role does not allow the action, or the password is wrong."""


class LoginFailed(NotAuthorized):
    """Unknown user or wrong password."""


def unknown(kind: str, name: str, known: list[str] | set[str]) -> BadInput:
    """``unknown consumer group 'ordrs' (did you mean 'orders'?)``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return BadInput(f"unknown {kind} '{name}'{hint}")
