"""What kpulse's principal may not read or do, gathered from a snapshot: the alert rule
KpulseNotAuthorized and the exporter's ``kpulse_not_authorized_values`` read it here. Pure: no I/O.

Each refusal is already a reason in the snapshot, next to the value it leaves null
(``kpulse/kafka/authorization.py`` words them ``not authorized: <Operation> on <resource>``); this
only collects them by area.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

PREFIX = "not authorized:"
AREAS = ("connection", "cluster", "consumer_groups", "probe")
"""Where a refusal can be: the principal's cluster ACLs (the connection check's limits), the
cluster section's reasons, consumer groups not readable, the end-to-end probe."""


def refusals(snapshot: Mapping[str, Any]) -> dict[str, list[str]]:
    """Area -> the refusals found there, each once (areas without any are left out)."""
    found: dict[str, list[str]] = {}

    def add(area: str, text: object) -> None:
        if isinstance(text, str) and text.startswith(PREFIX):
            entries = found.setdefault(area, [])
            if text not in entries:
                entries.append(text)

    for limit in (snapshot.get("connection") or {}).get("limits") or []:
        add("connection", limit)
    for reason in ((snapshot.get("cluster") or {}).get("reasons") or {}).values():
        add("cluster", reason)
    for group in snapshot.get("consumer_groups") or []:
        add("consumer_groups", group.get("error"))
    add("probe", (snapshot.get("probe") or {}).get("not_authorized"))
    return found
