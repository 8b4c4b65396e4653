"""One plan of each operation's type, shared by the registry's tests and the dashboard's table tests."""

from __future__ import annotations

from operations.election_plan import ElectionPlan, LeaderMove
from operations.group_plans import (
    DeleteGroupPlan, DeleteOffsetsPlan, GroupOffset, ShareResetPlan, StreamsGroupResetPlan,
)
from operations.offset_plan import PartitionReset, ResetPlan, Scope, Strategy
from operations.reassign_plan import PartitionMove, ReassignmentPlan
from operations.skip_plan import SkipRecordsPlan
from operations.streams_reset_plan import StreamsResetPlan

RESET_ROW = PartitionReset(topic="orders", partition=0, current=5, log_start=0, log_end=9, new=0)
SAMPLE_PLANS = {
    ResetPlan: ResetPlan("c", "billing", "Empty", Strategy("to-earliest"), Scope(all_topics=True), (RESET_ROW,), 1.0),
    StreamsResetPlan: StreamsResetPlan("c", "app", "Empty", Strategy("to-earliest"), (RESET_ROW,), (),
                                       ("app-store-changelog",), ("out",), 1.0),
    ElectionPlan: ElectionPlan("c", (("orders", None),), (LeaderMove("orders", 0, 2, 1, True),), 1.0),
    ReassignmentPlan: ReassignmentPlan("c", "drain broker 3", (PartitionMove("orders", 0, (1, 3), (1, 2)),), 1.0),
    StreamsGroupResetPlan: StreamsGroupResetPlan("c", "app", "Empty", Strategy("to-earliest"), Scope(all_topics=True),
                                                 (RESET_ROW,), ("app-store-changelog",), 1.0),
    ShareResetPlan: ShareResetPlan("c", "queue", "Empty", Strategy("to-latest"), Scope(topics=(("orders", (0,)),)),
                                   (RESET_ROW,), 1.0),
    DeleteOffsetsPlan: DeleteOffsetsPlan("c", "billing", "consumer", "Empty", ("orders",),
                                         (GroupOffset("orders", 0, 5),), 1.0),
    DeleteGroupPlan: DeleteGroupPlan("c", "app", "streams", "Empty", (GroupOffset("orders", 0, 5),),
                                     ("app-store-changelog",), 1.0),
    SkipRecordsPlan: SkipRecordsPlan("c", "billing", "classic", "Empty", "orders", 0, 5, 6, 0, 9, 1_700_000_000_123,
                                     1.0, "CreateTime"),
}
"""One plan of each type, on cluster ``c``, that changes something."""
