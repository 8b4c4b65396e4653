"""``kpulse acls``: the ``kafka-acls`` commands that give a principal what kpulse's features need
(:mod:`operations.permissions`), for one configured cluster: its probe topic, and its monitored
groups (``consumer_groups.include``, configured Streams applications) as ACL resource patterns.
Pure: no cluster is asked.

Operations act on groups kpulse monitors, so their group ACLs use the same patterns; the topics
whose offsets change or whose replicas move are not known in advance (every topic: narrow them by
hand); a Streams application's internal topics start with ``<application.id>-``, so a group
pattern gives their topic pattern.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from collections.abc import Iterable

from operations.errors import BadInput
from operations.permissions import (
    EVERY_TOPIC, INTERNAL_TOPICS, ITS_TOPICS, MONITORED_GROUPS, MONITORING, MOVED_TOPICS, PROBE, PROBE_GROUP,
    PROBE_TOPIC, READ_TOPICS, THE_CLUSTER, THE_GROUP, Feature, Need, feature, probe_group,
)

DEFAULT_FEATURES = (MONITORING, PROBE)
LITERAL, PREFIXED = "literal", "prefixed"
_METACHARACTERS = set(".^$*+?{}[]|()")


@dataclass(frozen=True)
class AclPattern:
    """A resource pattern as ``kafka-acls`` takes it."""

    name: str
    """The name, ``*`` for every resource."""
    pattern_type: str
    """``literal`` or ``prefixed``."""

    def covers(self, name: str) -> bool:
        if self.pattern_type == PREFIXED:
            return name.startswith(self.name)
        return self.name in ("*", name)

    def options(self, kind: str) -> list[str]:
        prefix = ["--resource-pattern-type", PREFIXED] if self.pattern_type == PREFIXED else []
        return [*prefix, f"--{kind}", self.name]


EVERYTHING = AclPattern("*", LITERAL)


def principal(text: str) -> str:
    """``kpulse`` -> ``User:kpulse``; a principal with its type (``User:CN=...``) is kept."""
    text = text.strip()
    if not text:
        raise BadInput("--principal is empty: name the principal kpulse connects as (User:NAME)")
    return text if ":" in text else f"User:{text}"


def _literal(regex: str) -> str | None:
    """The string ``regex`` matches exactly, when it is a plain string (escapes allowed); else None."""
    out, chars = [], iter(regex)
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            if not escaped or escaped.isalnum():
                return None
            out.append(escaped)
        elif char in _METACHARACTERS:
            return None
        else:
            out.append(char)
    return "".join(out)


def regex_pattern(regex: str) -> AclPattern | None:
    """The ACL pattern matching the group ids ``regex`` matches whole, or None when none says it."""
    body = regex[1:] if regex.startswith("^") else regex
    body = body[:-1] if body.endswith("$") and not body.endswith("\\$") else body
    if body in (".*", ".+"):
        return EVERYTHING
    if body.endswith(".*"):
        prefix = _literal(body[:-2])
        if prefix is not None:
            return AclPattern(prefix, PREFIXED) if prefix else EVERYTHING
    exact = _literal(body)
    return AclPattern(exact, LITERAL) if exact else None


def group_patterns(cluster) -> tuple[list[AclPattern], list[str]]:
    """The ACL patterns of the groups ``cluster`` (a ClusterConfig) monitors, and notes on the
    regexes no ACL pattern says (those are granted on every group)."""
    patterns, notes = [], []
    for regex in cluster.consumer_groups.include:
        found = regex_pattern(regex)
        if found is None:
            notes.append(f"consumer_groups.include {regex!r} is a regex kafka-acls cannot say: the group ACLs "
                         "below are on every group; narrow them by hand")
            found = EVERYTHING
        patterns.append(found)
    patterns += [AclPattern(app.application_id, LITERAL) for app in cluster.streams_apps]
    kept: list[AclPattern] = []
    for pattern in sorted(set(patterns), key=lambda p: (p != EVERYTHING, p.pattern_type != PREFIXED, len(p.name))):
        if not any(other.covers(pattern.name) and (other.pattern_type == PREFIXED or other == EVERYTHING
                                                   or pattern.pattern_type == LITERAL) for other in kept):
            kept.append(pattern)
    order = {p: i for i, p in enumerate(patterns)}
    return sorted(kept, key=lambda p: order[p]), notes


def internal_topic_patterns(groups: Iterable[AclPattern]) -> list[AclPattern]:
    """A Streams application's internal topics are named ``<application.id>-...``."""
    found = []
    for group in groups:
        pattern = (EVERYTHING if group == EVERYTHING else
                   AclPattern(group.name if group.pattern_type == PREFIXED else f"{group.name}-", PREFIXED))
        if pattern not in found:
            found.append(pattern)
    return found


def _resources(need: Need, cluster, groups: list[AclPattern]) -> list[tuple[str, AclPattern | None]]:
    """``(kafka-acls resource option, pattern)`` of each resource ``need`` is on."""
    scope = need.scope
    if scope is THE_CLUSTER:
        return [("cluster", None)]
    if scope in (MONITORED_GROUPS, THE_GROUP):
        return [("group", p) for p in groups]
    if scope is PROBE_TOPIC:
        return [("topic", AclPattern(cluster.probe.topic, LITERAL))]
    if scope is PROBE_GROUP:
        return [("group", AclPattern(probe_group(cluster.name), LITERAL))]
    if scope is INTERNAL_TOPICS:
        return [("topic", p) for p in internal_topic_patterns(groups)]
    if scope in (EVERY_TOPIC, ITS_TOPICS, MOVED_TOPICS, READ_TOPICS):
        return [("topic", EVERYTHING)]
    raise AssertionError(scope)


def _command(who: str, operations: list[str], kind: str, pattern: AclPattern | None) -> str:
    words = ["kpulse", "kafka-cli", "kafka-acls", "--add", "--allow-principal", who]
    for operation in operations:
        words += ["--operation", operation]
    words += ["--cluster"] if pattern is None else pattern.options(kind)
    return shlex.join(words)


def acl_commands(who: str, feature_names: Iterable[str], cluster) -> list[str]:
    """The lines ``kpulse acls`` prints: comments, and one ``kafka-acls --add`` per resource a
    feature needs (its operations together); optional needs as commented-out commands."""
    who = principal(who)
    groups, notes = group_patterns(cluster)
    lines = [f"# kafka-acls commands giving {who} what kpulse needs on cluster {cluster.name}: run them with the "
             "config of a principal that may create ACLs (kpulse --config ADMIN.yaml kafka-cli kafka-acls ...)"]
    lines += [f"# note: {note}" for note in notes]
    done: set[tuple[str, str, AclPattern | None]] = set()
    for name in feature_names:
        entry: Feature = feature(name)
        lines.append(f"# {entry.name} ({entry.role})" + (f": {entry.note}" if entry.note else ""))
        if entry.name == PROBE and not cluster.probe.enabled:
            lines.append("# the probe is disabled in the config (probe.enabled: false): nothing to grant")
            continue
        required: dict[tuple[str, AclPattern | None], list[str]] = {}
        optional: list[tuple[Need, str, AclPattern | None]] = []
        for need in entry.needs:
            for kind, pattern in _resources(need, cluster, groups):
                if need.optional:
                    optional.append((need, kind, pattern))
                elif (need.operation, kind, pattern) not in done:
                    done.add((need.operation, kind, pattern))
                    required.setdefault((kind, pattern), []).append(need.operation)
        if any(n.scope in (ITS_TOPICS, MOVED_TOPICS, READ_TOPICS) for n in entry.needs):
            lines.append("# every topic below: which topics it will act on is not known in advance; narrow "
                         "--topic '*' by hand")
        lines += [_command(who, operations, kind, pattern) for (kind, pattern), operations in required.items()]
        for need, kind, pattern in optional:
            lines.append(f"# (optional) {need.operation} on {need.scope.text}: {need.why}")
            lines.append("# optional: " + _command(who, [need.operation], kind, pattern))
    return lines
