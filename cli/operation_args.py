"""The operations subcommands' arguments: flags mirror the official Kafka tools
(``kafka-consumer-groups --reset-offsets``, ``kafka-streams-application-reset``,
``kafka-leader-election``, ``kafka-reassign-partitions``), but nothing changes without ``--execute``.
Numbers are read as strings here and parsed by :mod:`operations.numbers` (argparse's ``int`` would
accept ``1_000``), so a bad one is a one-line error like every other."""

from __future__ import annotations

from operations.group_plans import SHARE_STRATEGIES
from operations.offset_plan import STRATEGIES
from operations.reassign_plan import DEFAULT_THROTTLE_BYTES
from operations.registry import (
    DELETE_GROUP, DELETE_OFFSETS, ELECT_LEADERS, OPERATIONS, REASSIGN, RESET_OFFSETS, RESET_SHARE_GROUP,
    RESET_STREAMS_APP, RESET_STREAMS_GROUP, SKIP_RECORDS,
)
from operations.roles import ROLES

APPROVALS, AUDIT, USERS = "approvals", "audit", "users"
"""The subcommands that are not operations."""
COMMANDS = tuple(operation.name for operation in OPERATIONS) + (APPROVALS, AUDIT, USERS)
"""Every subcommand of this package (each operation's is its name)."""


def add_parsers(commands) -> None:
    """Add the operations subcommands to ``kpulse``'s subparsers: each operation's
    (:data:`PARSERS`), then approvals, audit and users."""
    for operation in OPERATIONS:
        PARSERS[operation.name](commands)
    _approvals(commands)
    _audit(commands)
    _users(commands)


def _reset_offsets(commands) -> None:
    reset = commands.add_parser(
        RESET_OFFSETS, help="reset a consumer group's committed offsets (dry run unless --execute)",
        description="Flags mirror `kafka-consumer-groups --reset-offsets`. Without --execute the plan is "
                    "shown and nothing changes.")
    reset.add_argument("--group", required=True, help="consumer group id")
    _cluster_and_actor(reset)
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has offsets for")
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,...]", help="a topic, or chosen partitions (repeatable)")
    _strategy_flags(reset, required=False)
    reset.add_argument("--plan", metavar="FILE", help="execute this JSON plan (from --json) instead of planning")
    reset.add_argument("--expect-current", action="append", metavar="TOPIC:PARTITION=OFFSET[,...]",
                       help="with --execute: refuse unless these are the committed offsets when it runs "
                            "(repeatable; stops a relative reset from applying twice)")
    _mode_flags(reset)
    reset.add_argument("--export", action="store_true", help="print the plan as the official tool's CSV (topic,partition,offset)")
    _include_internal(reset)


def _reset_streams_app(commands) -> None:
    streams = commands.add_parser(
        RESET_STREAMS_APP, help="reset a Kafka Streams application (dry run unless --execute)",
        description="Flags mirror `kafka-streams-application-reset`, but nothing changes without --execute. "
                    "Input topics go to the beginning (or the strategy), intermediate topics to the end, internal "
                    "topics are deleted, output topics are untouched. An application on group.protocol=streams "
                    "(a Streams group, KIP-1071) is reset as `reset-streams-group --delete-all-internal-topics` "
                    "does: --input-topics (default: every input topic of its topology) to the strategy.")
    streams.add_argument("--application-id", required=True, help="the app's application.id")
    _cluster_and_actor(streams)
    streams.add_argument("--input-topics", default="", metavar="LIST", help="comma-separated input topics")
    streams.add_argument("--intermediate-topics", default="", metavar="LIST", help="comma-separated intermediate topics")
    streams.add_argument("--internal-topics", default="", metavar="LIST",
                         help="delete only these internal topics (a subset of those found)")
    _strategy_flags(streams, required=False)
    _mode_flags(streams)
    _include_internal(streams)


def _reset_streams_group(commands) -> None:
    reset = commands.add_parser(
        RESET_STREAMS_GROUP, help="reset a Streams group's offsets, KIP-1071 (dry run unless --execute)",
        description="Flags mirror `kafka-streams-groups --reset-offsets` (Kafka 4.3.1). The group must be "
                    "Empty. Without --execute the plan is shown and nothing changes.")
    reset.add_argument("--group", required=True, help="the Streams group (the application.id)")
    _cluster_and_actor(reset)
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--all-input-topics", action="store_true",
                       help="every source topic of the topology the group has offsets for")
    scope.add_argument("--input-topic", action="append", metavar="TOPIC[:P,...]",
                       help="an input topic, or chosen partitions (repeatable)")
    _strategy_flags(reset, required=False)
    reset.add_argument("--delete-all-internal-topics", action="store_true",
                       help="with --execute: then delete the group's repartition and changelog topics")
    _mode_flags(reset)
    reset.add_argument("--export", action="store_true", help="print the plan as the official tool's CSV")
    _include_internal(reset)


def _reset_share_group(commands) -> None:
    reset = commands.add_parser(
        RESET_SHARE_GROUP, help="reset a share group's start offsets, KIP-932 (dry run unless --execute)",
        description="Flags mirror `kafka-share-groups --reset-offsets` (Kafka 4.3.1). The group must be Empty.")
    reset.add_argument("--group", required=True, help="the share group")
    _cluster_and_actor(reset)
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has a start offset for")
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,...]", help="a topic, or chosen partitions")
    _strategy_flags(reset, required=False, names=SHARE_STRATEGIES)
    _mode_flags(reset)
    _include_internal(reset)


def _delete_offsets(commands) -> None:
    delete = commands.add_parser(
        DELETE_OFFSETS, help="delete a group's offsets of some topics, any group type (dry run unless --execute)",
        description="As `kafka-consumer-groups`, `kafka-streams-groups` and `kafka-share-groups --delete-offsets`. "
                    "The group must be Empty.")
    delete.add_argument("--group", required=True, help="the group (classic, consumer, streams or share)")
    _cluster_and_actor(delete)
    delete.add_argument("--topic", action="append", required=True, metavar="TOPIC", help="a topic (repeatable)")
    _mode_flags(delete)
    _include_internal(delete)


def _delete_group(commands) -> None:
    delete = commands.add_parser(
        DELETE_GROUP, help="delete a group with its offsets, any group type (dry run unless --execute)",
        description="As the official tools' --delete. The group must be Empty.")
    delete.add_argument("--group", required=True, help="the group (classic, consumer, streams or share)")
    _cluster_and_actor(delete)
    delete.add_argument("--delete-all-internal-topics", action="store_true",
                        help="a Streams group: also delete its repartition and changelog topics")
    _mode_flags(delete)
    _include_internal(delete)


def _skip_records(commands) -> None:
    skip = commands.add_parser(
        SKIP_RECORDS, help="skip the record a group is stuck on: one partition's committed offset moves forward "
                           "(dry run unless --execute)",
        description="Moves one partition's committed offset from the record at it to the next offset, as "
                    "`kafka-consumer-groups --reset-offsets --topic T:P --shift-by 1` (or to --to-offset N, after "
                    "the committed offset and at most the log end); nothing else changes. The group must be Empty: "
                    "stop its consumers, skip, start them. Classic and consumer groups, Streams applications' "
                    "groups; a share group needs no skip (its delivery count limit archives a failing record).")
    skip.add_argument("--group", required=True, help="the group (classic, consumer or streams)")
    _cluster_and_actor(skip)
    skip.add_argument("--topic", required=True, help="the topic of the stuck partition")
    skip.add_argument("--partition", required=True, help="the stuck partition")
    skip.add_argument("--to-offset", metavar="N", help="skip up to offset N (the consumer resumes at N); "
                                                     "default: the committed offset + 1")
    skip.add_argument("--expect-from", metavar="OFFSET",
                      help="refuse unless OFFSET is the committed offset (the record you looked at)")
    _mode_flags(skip)
    _include_internal(skip)


def _elect_leaders(commands) -> None:
    elect = commands.add_parser(
        ELECT_LEADERS, help="preferred leader election (plan unless --execute)",
        description="Flags mirror `kafka-leader-election`; only the PREFERRED election type.")
    _cluster_and_actor(elect)
    elect.add_argument("--election-type", default="PREFERRED", type=str.upper, help="PREFERRED (the only one kpulse runs)")
    elect_scope = elect.add_mutually_exclusive_group()
    elect_scope.add_argument("--all-topic-partitions", action="store_true", help="every partition (the default)")
    elect_scope.add_argument("--topic", help="one topic (all its partitions, or --partition)")
    elect_scope.add_argument("--path-to-json-file", metavar="FILE",
                             help='{"partitions": [{"topic": "t", "partition": 0}, ...]}')
    elect.add_argument("--partition", help="with --topic: one partition")
    _mode_flags(elect)
    _include_internal(elect, "; --all-topic-partitions leaves them out without it")


def _reassign(commands) -> None:
    reassign = commands.add_parser(REASSIGN, help="partition reassignment: generate, execute, verify, cancel")
    reassign_commands = reassign.add_subparsers(dest="action", required=True, metavar="ACTION")
    generate = reassign_commands.add_parser("generate", help="plan a balanced assignment, or drain a broker (changes nothing)")
    _cluster_and_actor(generate)
    generate.add_argument("--topics", default="", metavar="LIST", help="comma-separated topics (default: all but internal)")
    generate.add_argument("--broker-list", default="", metavar="LIST", help="brokers to place replicas on (default: all)")
    generate.add_argument("--drain", metavar="BROKER", help="move every replica off this broker")
    generate.add_argument("--output", "-o", metavar="FILE", help="write the plan (kpulse JSON) to this file")
    generate.add_argument("--json", action="store_true", help="print the plan as JSON")
    _include_internal(generate, "; all topics (no --topics) leaves them out without it")
    for action, text in (("execute", "start a planned reassignment under a replication throttle"),
                         ("verify", "progress; when complete, remove the throttles"),
                         ("cancel", "cancel the moves still in progress and remove the throttles")):
        command = reassign_commands.add_parser(action, help=text)
        _cluster_and_actor(command)
        command.add_argument("--plan", required=True, metavar="FILE",
                             help="kpulse plan from generate, or the official tool's reassignment JSON (execute)")
        command.add_argument("--json", action="store_true")
        _include_internal(command)
        if action == "execute":
            command.add_argument("--throttle", default=str(DEFAULT_THROTTLE_BYTES), metavar="BYTES_PER_SEC",
                                 help=f"replication throttle while moving (default {DEFAULT_THROTTLE_BYTES})")
            command.add_argument("--wait", action="store_true", help="show progress until done, then verify")
            command.add_argument("--timeout", type=float, default=3600, help="with --wait: give up after seconds")


PARSERS = {RESET_OFFSETS: _reset_offsets, RESET_STREAMS_APP: _reset_streams_app,
           RESET_STREAMS_GROUP: _reset_streams_group, RESET_SHARE_GROUP: _reset_share_group,
           DELETE_OFFSETS: _delete_offsets, DELETE_GROUP: _delete_group, SKIP_RECORDS: _skip_records,
           ELECT_LEADERS: _elect_leaders, REASSIGN: _reassign}
"""Operation name -> the function adding its subcommand (flags mirroring the official tool's)."""


def _approvals(commands) -> None:
    approvals = commands.add_parser(APPROVALS, help="two-person approval requests (clusters with require_approval)")
    approval_commands = approvals.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = approval_commands.add_parser("list", help="pending requests (--all: every request)")
    listing.add_argument("--cluster", help="only this cluster")
    listing.add_argument("--all", action="store_true")
    listing.add_argument("--json", action="store_true")
    for action, text in (("approve", "approve a request and run its plan now"), ("reject", "reject a request")):
        command = approval_commands.add_parser(action, help=text)
        command.add_argument("request_id", metavar="ID")
        command.add_argument("--as", dest="as_user", metavar="USER", help="act as this user of the users file")
        command.add_argument("--json", action="store_true")


def _audit(commands) -> None:
    audit = commands.add_parser(AUDIT, help="the audit log of operations")
    audit_commands = audit.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = audit_commands.add_parser("show", help="recent audit records (oldest first)")
    show.add_argument("--cluster", help="only this cluster")
    show.add_argument("--since", default="P7D", help="ISO-8601 duration back from now (default P7D)")
    show.add_argument("--json", action="store_true")


def _users(commands) -> None:
    users = commands.add_parser(USERS, help=f"the local users file (roles: {', '.join(ROLES)})")
    users_commands = users.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = users_commands.add_parser("add", help="add a user or replace its role and password "
                                                "(password from $KPULSE_NEW_PASSWORD or a prompt)")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=ROLES)
    add.add_argument("--as", dest="as_user", metavar="USER", help="act as this user (an admin)")
    users_commands.add_parser("list", help="users and their roles")


def _cluster_and_actor(parser) -> None:
    parser.add_argument("--cluster", help="configured cluster name (default: the first)")
    parser.add_argument("--as", dest="as_user", metavar="USER", help="act as this user of the users file")


def _include_internal(parser, more: str = "") -> None:
    parser.add_argument("--include-internal", action="store_true",
                        help="allow Kafka's internal topics (names starting with __, e.g. __consumer_offsets), "
                             "refused without it" + more)


def _strategy_flags(parser, required: bool, names: tuple[str, ...] = STRATEGIES) -> None:
    strategies = parser.add_mutually_exclusive_group(required=required)
    for name in names:
        if name in ("to-earliest", "to-latest", "to-current"):
            strategies.add_argument(f"--{name}", dest="strategy", action="store_const", const=(name, None))
        else:
            strategies.add_argument(f"--{name}", dest="strategy", metavar="VALUE",
                                    type=lambda value, n=name: (n, value))


def _mode_flags(parser) -> None:
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--dry-run", action="store_true", help="show the plan only (the default)")
    modes.add_argument("--execute", action="store_true", help="apply the plan, without a prompt")
    parser.add_argument("--json", action="store_true", help="print the plan and the result as JSON")
