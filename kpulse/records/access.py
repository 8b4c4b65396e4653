"""Who may see the contents of records (keys, values, header values): the rules, pure. The role
check and the audit of a reveal are :mod:`operations.records_access`'s, which asks these.

Rule 1: nobody sees the contents unless they ask to reveal them (``kpulse records --reveal``, the
dashboard's reveal button); until then each is shown as hidden with its size.
Rule 2: a viewer never sees them.
Rule 3: an operator (or admin) sees them only for a topic the cluster's ``records.visible_topics``
matches (default: none).
Rule 4: the mask rules apply to whatever is shown, always (:mod:`kpulse.records.display`).
"""

from __future__ import annotations

from kpulse.config.model import ClusterConfig


def reveal_refusal(cluster: ClusterConfig, topic: str, *, may_see_contents: bool) -> str | None:
    """Why the contents of ``topic``'s records may not be revealed to this user, one line; None when
    they may. ``may_see_contents``: the user's role is operator or above (rule 2)."""
    if not may_see_contents:
        return "keys and values are shown to operators only (this user is a viewer)"
    if not cluster.records.topic_visible(topic):
        return (f"records.visible_topics of cluster {cluster.name} does not match topic {topic!r}: "
                "its keys and values are not shown to anyone")
    return None
