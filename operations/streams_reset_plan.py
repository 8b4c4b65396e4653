"""Kafka Streams application reset plans: pure data and pure decisions, no I/O. Semantics are those
of ``kafka-streams-application-reset`` (Kafka 4.x ``StreamsResetter``):

1. input topics: the group's offsets go to the beginning, or where the chosen strategy says
   (``--to-offset``, ``--shift-by``, ``--to-datetime``, ``--by-duration``, ``--to-latest``,
   ``--from-file``), clamped to the log; ``--shift-by`` starts from the log end of a partition
   without a committed offset (the resetter's consumer falls back to ``latest``);
2. intermediate topics: offsets to the end of the log;
3. internal topics, deleted: topics named as internal topics of the application
   (:func:`operations.internal_topics.is_internal_topic`), except topics named as input or
   intermediate; ``--internal-topics`` narrows the set to a subset;
4. output topics: untouched; local state: each instance must run ``KafkaStreams#cleanUp()`` (or
   delete ``<state.dir>/<application.id>``) before it starts again.

An application id is a prefix of others' (``kpulse`` of ``kpulse-demo-streams``), so an internal
topic belongs to the *longest* existing application id its name starts with (followed by ``-``):
``kpulse-demo-streams-order-counts-changelog`` is never ``kpulse``'s while a group
``kpulse-demo-streams`` exists (:func:`topic_owners`). The planner and executor that read the
cluster are :mod:`operations.streams_reset`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from operations.offset_plan import PartitionReset, Strategy, TopicPartition, non_empty_id, partition_rows, strategy_from
from operations.plan_fields import PlanFields

STREAMS_STRATEGIES = ("to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime", "by-duration", "from-file")
LOCAL_STATE_NOTE = ("Local state is not reset: before restarting, every instance must call KafkaStreams#cleanUp() "
                    "or delete <state.dir>/{app} (default ${{java.io.tmpdir}}/kafka-streams/{app}).")


def topic_owners(application_id: str, topics: Iterable[str], applications: Iterable[str]) -> dict[str, str]:
    """Each of ``topics`` (internal topic names of ``application_id``) -> the application that owns
    it: the longest of ``applications`` (existing group ids) and ``application_id`` that the name
    starts with, followed by ``-``."""
    candidates = [g for g in applications if g.startswith(application_id + "-")] + [application_id]
    return {t: max((g for g in candidates if t.startswith(g + "-")), key=len) for t in topics}


@dataclass(frozen=True)
class StreamsResetPlan:
    """What a Streams application reset would do (module docstring); changes nothing."""

    cluster: str
    application_id: str
    group_state: str
    strategy: Strategy
    input: tuple[PartitionReset, ...]
    intermediate: tuple[PartitionReset, ...]
    delete_topics: tuple[str, ...]
    """Internal topics to delete."""
    untouched: tuple[str, ...]
    """Other topics the application has offsets on (output or forgotten input): left alone."""
    planned_at: float
    foreign: tuple[tuple[str, str], ...] = ()
    """(topic, application id): topics named like internal topics of this application that belong
    to another application whose id is longer; left alone."""

    @property
    def target(self) -> str:
        return f"app {self.application_id}"

    @property
    def local_state_note(self) -> str:
        return LOCAL_STATE_NOTE.format(app=self.application_id)

    def new_offsets(self) -> dict[TopicPartition, int]:
        return {(p.topic, p.partition): p.new for p in self.input + self.intermediate}

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "local_state_note": self.local_state_note}

    @classmethod
    def from_dict(cls, data: object) -> StreamsResetPlan:
        """The plan ``to_dict`` wrote; every field's type checked (:mod:`operations.plan_fields`)."""
        fields = PlanFields(data, "a kpulse Streams reset plan")
        strategy = fields.section("strategy")
        foreign = []
        for index, pair in enumerate(fields.list("foreign", optional=True) or []):
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                fields.fail(f"foreign[{index}]", f"expected [topic, application id], got {pair!r}")
            foreign.append((pair[0], pair[1]))
        return cls(cluster=fields.string("cluster"), application_id=non_empty_id(fields, "application_id"),
                   group_state=fields.string("group_state"), strategy=strategy_from(strategy),
                   input=partition_rows(fields, "input"), intermediate=partition_rows(fields, "intermediate"),
                   delete_topics=tuple(fields.strings("delete_topics")), untouched=tuple(fields.strings("untouched")),
                   planned_at=fields.number("planned_at"), foreign=tuple(foreign))
