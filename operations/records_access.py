"""Revealing the contents of records (keys, values, header values) to a user: the role check and
the audit row. The CLI (``kpulse records --reveal``) and the dashboard's records view both call
:func:`reveal` before they show any contents, and show them only when it returns.

The rules are :mod:`kpulse.records.access`'s; this adds who the user is now (the users file is
read at every reveal, as at every action) and the audit log. The audit row says who revealed
which partition's offsets, never what they hold. A read-only cluster allows a reveal: it changes
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from kpulse.config.model import ClusterConfig
from kpulse.records.access import reveal_refusal
from operations.access import User, UsersFile
from operations.audit import AuditLog, AuditRecord
from operations.errors import NotAuthorized, Refused
from operations.roles import OPERATOR, ROLES

REVEAL_RECORDS = "reveal-records"
"""The audit action of a reveal."""


def may_see_contents(user: User) -> bool:
    """Whether ``user``'s role may see record contents at all (operator or above)."""
    return user.role in ROLES and ROLES.index(user.role) >= ROLES.index(OPERATOR)


def reveal_refusal_for(user: User, cluster: ClusterConfig, topic: str) -> str | None:
    """Why ``user`` may not reveal ``topic``'s record contents on ``cluster``, one line; None when
    they may (to offer the reveal control or not; :func:`reveal` decides with the current role)."""
    return reveal_refusal(cluster, topic, may_see_contents=may_see_contents(user))


def reveal(audit: AuditLog, users: UsersFile, user: User, cluster: ClusterConfig, topic: str, partition: int,
           offsets: Sequence[int]) -> User:
    """Authorize ``user`` (with the role the users file gives now) to see the contents of the records
    at ``offsets`` of ``topic``-``partition``, and audit it: a row ``reveal-records`` with the
    partition and the offsets (``ok``, or ``denied`` with the reason). Returns the current user;
    raises :class:`NotAuthorized` for a role that may not (or a user no longer in the users file),
    :class:`Refused` for a topic ``records.visible_topics`` does not match."""
    shown = sorted(set(offsets))
    plan = {"topic": topic, "partition": partition, "offsets": _ranges(shown), "records": len(shown)}

    def audited(result: str, error: str | None = None) -> None:
        audit.record(AuditRecord(cluster=cluster.name, actor=user.name, action=REVEAL_RECORDS,
                                 target=f"{topic}-{partition}", result=result, plan=plan, error=error))

    try:
        current = users.current(user)
    except NotAuthorized as error:
        audited("denied", str(error))
        raise
    refusal = reveal_refusal(cluster, topic, may_see_contents=may_see_contents(current))
    if refusal is not None:
        audited("denied", refusal)
        raise (NotAuthorized if not may_see_contents(current) else Refused)(refusal)
    audited("ok")
    return current


def _ranges(offsets: Sequence[int]) -> list[str]:
    """Sorted offsets as ranges: ``[3, 4, 5, 9]`` -> ``["3-5", "9"]``."""
    ranges: list[str] = []
    start = previous = None
    for offset in offsets:
        if previous is not None and offset == previous + 1:
            previous = offset
            continue
        if start is not None:
            ranges.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = offset
    if start is not None:
        ranges.append(str(start) if start == previous else f"{start}-{previous}")
    return ranges
