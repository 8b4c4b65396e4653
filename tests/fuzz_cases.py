"""The cases of each operation for the fuzz harness (:mod:`tests.fuzz_operations`): Hypothesis
strategies drawing a whole ``kpulse`` command line (and the files it names) from the hostile values
of :mod:`tests.fuzz_inputs`, plus the cases issue 13 reported, run first as seeds. Issue 15's
operations on Kafka 4's group types (:data:`GROUP_OPERATIONS`) draw their group among the world's
groups of every type (the active one too), mistyped and missing flags, and are seeded with a case
on the active group, one on a group of another type, a valid dry run and a valid execute.

Command lines use ``--flag=value`` so that values starting with ``-`` stay values. Plan files are a
valid plan (made by kpulse at setup) edited field by field: deleted keys, values of another type or
size, offsets outside the log, unknown and internal topics, partitions that do not exist.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Callable

from hypothesis import strategies as st

from tests.fuzz_inputs import (
    FIRST_RECORD_MS, INTERNAL_TOPICS, Value, datetimes, durations, hostile_names, in_script, numbers,
)

if TYPE_CHECKING:
    from tests.fuzz_world import World

OPERATIONS = ("reset-offsets", "reset-offsets-plan", "from-file", "reset-streams-app", "elect-leaders",
              "reassign-generate", "reassign-execute", "audit-show", "approvals-approve", "reset-streams-group",
              "reset-share-group", "delete-offsets", "delete-group")
GROUP_OPERATIONS = ("reset-streams-group", "reset-share-group", "delete-offsets", "delete-group")
"""Issue 15's operations on Kafka 4's group types: the harness reads the groups and topics they may
change before and after every case (:meth:`tests.fuzz_world.World.snapshot`)."""


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    """``{file:NAME}``, ``{dir}``, ``{missing}`` and ``{request}`` are replaced when run."""
    files: tuple[tuple[str, bytes], ...] = ()
    """(name, content) written to the case directory before the run."""
    execute: bool = False
    group: str | None = None
    """The group whose committed offsets an ``--execute`` may change."""
    malformed: bool = False
    """A value the official tools refuse is on the command line or in the CSV file."""
    names_internal: bool = False
    """An internal topic is named on the command line (refused unless --include-internal)."""
    oracle: tuple[str, int] | None = None
    """("offset" | "shift" | "timestamp" | "duration", value): where the strategy must land."""
    approval: tuple[str, str] | None = None
    """(requester, plan JSON) of an approval request created before the run."""
    operation: str | None = None
    """One of :data:`GROUP_OPERATIONS`: the case is checked against the world's snapshot."""


RESET_MODES = ((), ("--dry-run",), ("--execute",), ("--execute",))
OUTPUTS = ((), ("--json",), ("--export",))
PARTITION_LISTS = (("0,2", False), ("0", False), ("1,2", False), ("0, 2", False), (" 1", False), ("1_0", True),
                   (in_script("0,1", "arabic-indic"), True), (in_script("2", "fullwidth"), True), ("-1", False),
                   ("99", False), ("", False), (",", False), ("0,,1", False), ("99999999999999999999", False),
                   ("0:1", False), ("0,0", False))


@st.composite
def strategy_args(draw, w: World, names: tuple[str, ...], streams: bool = False, csv_topics: list[str] | None = None):
    """(flags, malformed, oracle, files) for one reset strategy (a ``--from-file`` CSV naming
    ``csv_topics``, by default those of the reset kind)."""
    name = draw(st.sampled_from(names))
    if name in ("to-earliest", "to-latest", "to-current"):
        return [f"--{name}"], False, None, ()
    if name in ("to-offset", "shift-by"):
        value = draw(numbers())
        oracle = None if value.meaning is None else ("offset" if name == "to-offset" else "shift", value.meaning)
        return [f"--{name}={value.text}"], value.malformed, oracle, ()
    if name == "to-datetime":
        value = draw(datetimes(FIRST_RECORD_MS))
        return [f"--to-datetime={value.text}"], value.malformed, (None if value.meaning is None else ("timestamp", value.meaning)), ()
    if name == "by-duration":
        value = draw(durations())
        return [f"--by-duration={value.text}"], value.malformed, (None if value.meaning is None else ("duration", value.meaning)), ()
    content, malformed = draw(csv_files(w, csv_topics or ([w.app_in] if streams else [w.topic_a, w.topic_b])))
    return ["--from-file={file:plan.csv}"], malformed, None, (("plan.csv", content),)


@st.composite
def reset_offsets_cases(draw, w: World) -> Case:
    group = draw(hostile_names([w.groups["reset"]]))
    topics = hostile_names([w.topic_a, w.topic_b])
    scope_kind = draw(st.sampled_from(["all", "topic", "topic", "partitions", "partitions", "multi", "none", "both"]))
    malformed, named = False, []
    if scope_kind == "all":
        scope = ["--all-topics"]
    elif scope_kind in ("topic", "both"):
        named = [draw(topics)]
        scope = [f"--topic={named[0]}"] + (["--all-topics"] if scope_kind == "both" else [])
    elif scope_kind == "partitions":
        parts, malformed = draw(st.sampled_from(PARTITION_LISTS))
        named = [draw(topics)]
        scope = [f"--topic={named[0]}:{parts}"]
    elif scope_kind == "multi":
        named = draw(st.lists(topics, min_size=2, max_size=3))
        scope = [f"--topic={t}" for t in named]
    else:
        scope = []
    flags, bad_value, oracle, files = draw(strategy_args(w, ("to-earliest", "to-latest", "to-current", "to-offset",
                                                             "shift-by", "to-datetime", "by-duration", "from-file")))
    mode, output = draw(st.sampled_from(RESET_MODES)), draw(st.sampled_from(OUTPUTS))
    return Case(("--config", w.config, "reset-offsets", f"--group={group}", *scope, *flags, *mode, *output),
                files=files, execute="--execute" in mode, group=group, malformed=malformed or bad_value,
                names_internal=any(t in INTERNAL_TOPICS for t in named), oracle=oracle)


@st.composite
def csv_files(draw, w: World, topics: list[str]) -> tuple[bytes, bool]:
    """A ``--from-file`` CSV: rows of hostile cells, random bytes, non-UTF-8, a field over the csv
    module's 131,072-character limit, odd quoting, a BOM, other digit scripts, extra columns."""
    kind = draw(st.sampled_from(["rows", "rows", "rows", "valid", "bytes", "latin1", "huge", "quoting", "bom"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300)), False
    if kind == "huge":
        return f"{topics[0]},0,{'1' * 140_000}\n".encode(), False
    if kind == "latin1":
        return f"{topics[0]},0,5\n{topics[0]},1,5,caf\xe9,x\n".encode("latin-1"), False
    if kind == "quoting":
        return draw(st.sampled_from([f'"{topics[0]}",0,5\n', f'"{topics[0]},0",1\n', f'{topics[0]},"0","5"\n',
                                     f'"{topics[0]},0,5\n', '"fz.""a",0,5\n', f"{topics[0]},0,5\\\n",
                                     f"{topics[0]}\t0\t5\n", f"{topics[0]};0;5\n"])).encode(), False
    rows, malformed = [], False
    for _ in range(draw(st.integers(1, 4))):
        topic = draw(st.sampled_from(topics)) if kind == "valid" else draw(hostile_names(topics))
        partition = Value(str(draw(st.integers(0, 2))), 0) if kind == "valid" else draw(numbers(small=(-1, 3)))
        offset = draw(numbers())
        cells = [topic, partition.text, offset.text]
        malformed |= partition.malformed or offset.malformed
        extra = draw(st.sampled_from(["", "", "group", "other-group", "column"])) if kind != "valid" else ""
        if extra == "group":
            cells.insert(0, w.groups["file"])
        elif extra == "other-group":
            cells.insert(0, "someone-else")
        elif extra == "column":
            cells.append("extra")
        rows.append(",".join(cells))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(rows) + draw(st.sampled_from(["", newline]))
    return (("\ufeff" if kind == "bom" else "") + text).encode(), malformed


@st.composite
def from_file_cases(draw, w: World) -> Case:
    group = draw(st.one_of(st.just(w.groups["file"]), st.just(w.groups["file"]), hostile_names([w.groups["file"]])))
    source = draw(st.sampled_from(["file"] * 8 + ["dir", "missing"]))
    files: tuple[tuple[str, bytes], ...] = ()
    malformed = False
    if source == "file":
        content, malformed = draw(csv_files(w, [w.topic_a, w.topic_b]))
        files, path = (("plan.csv", content),), "{file:plan.csv}"
    else:
        path = "{" + source + "}"
    scope = draw(st.sampled_from([(), ("--all-topics",), (f"--topic={w.topic_a}",)]))
    mode, output = draw(st.sampled_from(RESET_MODES)), draw(st.sampled_from(OUTPUTS))
    return Case(("--config", w.config, "reset-offsets", f"--group={group}", *scope, f"--from-file={path}", *mode,
                 *output), files=files, execute="--execute" in mode, group=group, malformed=malformed)


JSON_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True),
                      st.text(max_size=8), st.lists(st.integers(-3, 3), max_size=3),
                      st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                      st.sampled_from(["١٢", "1_0", 10 ** 30, -1, 0, "", "__consumer_offsets"]))


def _paths(value, prefix=()) -> list[tuple]:
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append(prefix + (key,))
        found += _paths(child, prefix + (key,))
    return found


def _set(document, path: tuple, value, delete: bool = False):
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def edited_json(draw, base: dict, semantic: list[Callable[[dict, int], None]], raw: bool = True) -> bytes:
    """``base`` edited as a user might: one field deleted or given a value of another type or size,
    one meaningful edit from ``semantic`` (functions editing a copy in place, given a row number),
    or (``raw``) not JSON at all."""
    kind = draw(st.sampled_from(["as-is", "field", "field", "semantic", "semantic", "semantic"] + ["file"] * raw))
    document = json.loads(json.dumps(base))
    if kind == "file":
        return draw(st.one_of(st.sampled_from([b"", b"{", b"[]", b"null", b"5", b'"plan"', b"\xff\xfe{}",
                                               json.dumps(base).encode("utf-16"), b"[" * 50_000 + b"]" * 50_000]),
                              st.binary(max_size=100)))
    if kind == "field":
        path = draw(st.sampled_from(_paths(document)))
        if draw(st.booleans()):
            _set(document, path, None, delete=True)
        else:
            _set(document, path, draw(JSON_JUNK))
    elif kind == "semantic":
        draw(st.sampled_from(semantic))(document, draw(st.integers(0, 10)))
    return json.dumps(document).encode()


def _reset_plan_edits(w: World) -> list[Callable[[dict, int], None]]:
    def row(plan, i):
        rows = plan["partitions"]
        return rows[i % len(rows)]

    def edit(**changes):
        def apply(plan, i):
            target = row(plan, i)
            for key, value in changes.items():
                target[key] = value(target) if callable(value) else value
        return apply

    def append(**changes):
        def apply(plan, i):
            plan["partitions"].append({**row(plan, i), **changes})
        return apply

    def top(key, value):
        def apply(plan, i):
            plan[key] = value
        return apply

    return [edit(new=lambda r: r["log_end"] + 1_000_000), edit(new=-5), edit(new=lambda r: r["log_start"] - 1),
            edit(new=lambda r: r["log_end"] + 1), edit(new=lambda r: r["log_end"] + 1_000_000, log_end=10 ** 9),
            edit(topic=f"{w.prefix}.missing"), append(topic=f"{w.prefix}.missing"), edit(topic="__consumer_offsets", partition=0),
            append(topic="__consumer_offsets", partition=0, current=None), edit(partition=99), edit(partition=-1),
            edit(new="5"), edit(new=5.5), edit(new=2 ** 63), edit(new=None), edit(current=None), edit(current=0),
            append(topic=w.topic_b, partition=1, current=None, new=3), lambda plan, i: plan["partitions"].append(row(plan, i)),
            top("group_id", w.groups["reset"]), top("cluster", "elsewhere"), top("partitions", []),
            top("strategy", {"name": "bogus"}), top("scope", None), top("partitions", {"0": 1})]


@st.composite
def reset_plan_cases(draw, w: World) -> Case:
    group = w.groups["plan"]
    base = draw(st.sampled_from(w.base_reset_plans[group]))
    content = draw(edited_json(base, _reset_plan_edits(w)))
    with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError):
        edited = json.loads(content)
        if isinstance(edited, dict) and isinstance(edited.get("group_id"), str):
            group = edited["group_id"]
    group = draw(st.one_of(st.just(group), st.just(group), st.just(group), hostile_names([w.groups["plan"]])))
    mode, output = draw(st.sampled_from(RESET_MODES)), draw(st.sampled_from(((), ("--json",), ("--json",))))
    return Case(("--config", w.config, "reset-offsets", f"--group={group}", "--plan={file:plan.json}", *mode, *output),
                files=(("plan.json", content),), execute="--execute" in mode, group=group)


STREAMS_STRATEGIES = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime", "by-duration",
                      "from-file")


@st.composite
def streams_cases(draw, w: World) -> Case:
    prefixes = [w.app[:n] for n in range(1, len(w.app))] + [w.app + "-", w.app_x + "-", w.app + "-store"]
    app = draw(st.one_of(hostile_names([w.app, w.app_x]), st.sampled_from(prefixes)))
    topic = hostile_names([w.app_in])
    inputs = draw(st.sampled_from(["list", "list", "list", "empty", "odd"]))
    named = []
    if inputs == "list":
        named = draw(st.lists(topic, min_size=1, max_size=2))
        input_topics = ",".join(named)
    elif inputs == "odd":
        input_topics = draw(st.sampled_from([f"{w.app_in},{w.app_in}", f" {w.app_in} ", f"{w.app_in},,", ",", " "]))
    else:
        input_topics = ""
    middle = draw(st.sampled_from(["", "", w.app_mid, w.app_in, "__consumer_offsets", w.app_internal[0]]))
    internal = draw(st.sampled_from(["", "", "", ",".join(w.app_internal[:2]), w.app_internal[2], "__consumer_offsets",
                                     f"{w.app}-nope-changelog"]))
    flags, malformed, oracle, files = draw(st.one_of(st.just(([], False, None, ())),
                                                     strategy_args(w, STREAMS_STRATEGIES, streams=True)))
    argv = ["--config", w.config, "reset-streams-app", f"--application-id={app}", f"--input-topics={input_topics}"]
    argv += [f"--intermediate-topics={middle}"] * bool(middle) + [f"--internal-topics={internal}"] * bool(internal)
    argv += flags + list(draw(st.sampled_from(((), ("--dry-run",), ("--json",)))))
    named_internal = any(t in INTERNAL_TOPICS for t in named) or middle.startswith("__") or internal.startswith("__")
    return Case(tuple(argv), files=files, malformed=malformed, names_internal=named_internal, oracle=oracle)


@st.composite
def election_cases(draw, w: World) -> Case:
    topic = draw(hostile_names([w.topic_a, w.topic_b, w.topic_r]))
    kind = draw(st.sampled_from(["default", "all", "topic", "topic-partition", "json", "json", "partition-only"]))
    argv, malformed, execute = ["--config", w.config, "elect-leaders"], False, False
    files: tuple[tuple[str, bytes], ...] = ()
    if kind == "all":
        argv.append("--all-topic-partitions")
    if kind in ("topic", "topic-partition"):
        argv.append(f"--topic={topic}")
        execute = topic in (w.topic_a, w.topic_b, w.topic_r)
    if kind in ("topic-partition", "partition-only"):
        partition = draw(numbers(small=(-2, 4)))
        argv.append(f"--partition={partition.text}")
        malformed = partition.malformed
    if kind == "json":
        base = {"partitions": [{"topic": w.topic_a, "partition": 0}, {"topic": w.topic_r, "partition": 1}]}
        edits = [lambda d, i: d["partitions"].append({"topic": "__consumer_offsets", "partition": i}),
                 lambda d, i: d["partitions"].append({"topic": f"{w.prefix}.missing", "partition": 0}),
                 lambda d, i: d["partitions"].append({"topic": w.topic_a, "partition": "1_0"}),
                 lambda d, i: d["partitions"].append({"topic": w.topic_a, "partition": 1.5}),
                 lambda d, i: d.update(partitions={"topic": w.topic_a})]
        files = (("elect.json", draw(edited_json(base, edits))),)
        argv.append(draw(st.sampled_from(["--path-to-json-file={file:elect.json}"] * 8
                                         + ["--path-to-json-file={dir}", "--path-to-json-file={missing}"])))
    if draw(st.integers(0, 5)) == 0:
        argv.append(f"--election-type={draw(st.sampled_from(['preferred', 'unclean', 'UNCLEAN', '', 'ß', ' PREFERRED']))}")
    if execute and draw(st.integers(0, 4)) == 0:
        argv.append("--execute")
    argv += list(draw(st.sampled_from(((), ("--json",)))))
    return Case(tuple(argv), files=files, malformed=malformed, names_internal=topic in INTERNAL_TOPICS and "--topic=" + topic in argv)


@st.composite
def reassign_generate_cases(draw, w: World) -> Case:
    named = draw(st.lists(hostile_names([w.topic_r, w.topic_a]), max_size=3))
    argv = ["--config", w.config, "reassign", "generate", f"--topics={','.join(named)}"] if named else \
        ["--config", w.config, "reassign", "generate"]
    malformed = False
    brokers = draw(st.sampled_from(["", "", "1,2,3", "1,2", "2,3", "1_0", in_script("1,2", "arabic-indic"), "-1", "99",
                                    "1,,2", " 1 , 2 ", "a", "1,1", "0"]))
    if brokers:
        argv.append(f"--broker-list={brokers}")
        malformed = "_" in brokers or not brokers.replace(",", "").replace(" ", "").replace("-", "").isascii()
    if draw(st.integers(0, 3)) == 0:
        drain = draw(numbers(small=(-1, 4)))
        argv.append(f"--drain={drain.text}")
        malformed |= drain.malformed
    output = draw(st.sampled_from([None, None, "{file:out.json}", "{dir}", "{missing}"]))
    if output:
        argv.append(f"--output={output}")
    argv += list(draw(st.sampled_from(((), ("--json",)))))
    return Case(tuple(argv), malformed=malformed, names_internal=any(t in INTERNAL_TOPICS for t in named))


@st.composite
def reassign_execute_cases(draw, w: World) -> Case:
    def move(document, i):
        moves = document["moves"] if "moves" in document else document["partitions"]
        return moves[i % len(moves)]

    def edit(**changes):
        return lambda document, i: move(document, i).update(changes)

    official = {"version": 1, "partitions": [{"topic": w.topic_r, "partition": 0, "replicas": [2, 3]},
                                             {"topic": w.topic_r, "partition": 1, "replicas": [3, 1]}]}
    if draw(st.booleans()):
        base, edits = w.base_reassign_plan, [edit(target=[]), edit(target=[1, 1]), edit(target=[99]), edit(partition=99),
                                             edit(topic="__consumer_offsets"), edit(current=[3, 2, 1]),
                                             lambda d, i: d.pop("goal"), lambda d, i: d.update(cluster="elsewhere"),
                                             edit(target="1,2"), edit(target=[1.5, 2])]
    else:
        base, edits = official, [edit(replicas=[]), edit(replicas=[1, 1]), edit(replicas=[99]), edit(partition=99),
                                 edit(topic="__consumer_offsets", partition=0, replicas=w.internal_move),
                                 edit(topic=f"{w.prefix}.missing"), edit(replicas="1,2"), edit(partition="0"),
                                 lambda d, i: d.update(partitions={"topic": w.topic_r})]
    content = draw(edited_json(base, edits))
    argv = ["--config", w.config, "reassign", "execute", "--plan={file:reassign.json}"]
    malformed = False
    if draw(st.integers(0, 3)) == 0:
        throttle = draw(numbers(small=(-5, 10 ** 8)))
        argv.append(f"--throttle={throttle.text}")
        malformed = throttle.malformed
    argv += list(draw(st.sampled_from(((), ("--json",)))))
    return Case(tuple(argv), files=(("reassign.json", content),), malformed=malformed)


@st.composite
def audit_cases(draw, w: World) -> Case:
    since = draw(durations())
    argv = ["--config", w.audit_config, "audit", "show", f"--since={since.text}"]
    argv += list(draw(st.sampled_from(((), ("--json",), ("--cluster=fuzz",), ("--cluster=nope",)))))
    return Case(tuple(argv), malformed=since.malformed)


@st.composite
def approval_cases(draw, w: World) -> Case:
    group = w.groups["approve"]
    base = draw(st.sampled_from(w.base_reset_plans[group]))
    plan = draw(st.one_of(st.just(json.dumps(base).encode()), edited_json(base, _reset_plan_edits(w), raw=False)))
    requester = draw(st.sampled_from(["alice", "alice", "alice", "victor", "mallory", w.os_user]))
    request = draw(st.one_of(st.just("{request}"), st.just("{request}"), st.just("{request}"),
                             st.just("{request-prefix}"), hostile_names(["{request}"])))
    argv = ["--config", w.config, "approvals", "approve"] + (["--", request] if request.startswith("-") else [request])
    argv += list(draw(st.sampled_from(((), ("--json",)))))
    return Case(tuple(argv), execute=True, group=group, approval=(requester, plan.decode()))


# --- issue 15's group operations ---------------------------------------------------------------------

TYPOS = ("--excute", "--dryrun", "--to-earlist", "--all-topic=x", "--topics=x", "--group", "--execute=yes", "-x",
         "--delete-all-internal-topic=1")
"""Mistyped or misplaced flags (argparse's exit 2 with one usage line; abbreviations it accepts are
not typos)."""


def _group_names(w: World, usual: str) -> st.SearchStrategy[str]:
    """Mostly ``usual``; then a group of another type, the active group, hostile names."""
    others = [w.streams_group, w.share_group, w.groups["delete"], w.groups["offsets"], w.live]
    return st.one_of(st.just(usual), st.just(usual), st.sampled_from(others), hostile_names([usual]))


def _group_flag(draw, group: str) -> list[str]:
    """``--group=<group>``, now and then left out (argparse: the flag is required)."""
    return [] if draw(st.integers(0, 11)) == 0 else [f"--group={group}"]


def _tail(draw, outputs=OUTPUTS) -> tuple[list[str], bool]:
    """(mode, output and maybe a typo; whether the mode is --execute)."""
    mode, output = draw(st.sampled_from(RESET_MODES)), draw(st.sampled_from(outputs))
    typo = [draw(st.sampled_from(TYPOS))] if draw(st.integers(0, 7)) == 0 else []
    return [*mode, *output, *typo], "--execute" in mode


def _scope(draw, topics: list[str], all_flag: str, topic_flag: str) -> tuple[list[str], bool, list[str]]:
    """(scope flags, malformed, topics named)."""
    kind = draw(st.sampled_from(["all", "all", "topic", "topic", "partitions", "partitions", "multi", "none", "both"]))
    named = [] if kind in ("all", "none") else draw(st.lists(hostile_names(topics), min_size=1,
                                                             max_size=3 if kind == "multi" else 1))
    malformed, flags = False, [all_flag] if kind in ("all", "both") else []
    if kind == "partitions":
        parts, malformed = draw(st.sampled_from(PARTITION_LISTS))
        flags.append(f"{topic_flag}={named[0]}:{parts}")
    else:
        flags += [f"{topic_flag}={t}" for t in named]
    return flags, malformed, named


@st.composite
def streams_group_cases(draw, w: World) -> Case:
    group = draw(_group_names(w, w.streams_group))
    scope, malformed, named = _scope(draw, [w.streams_in, w.share_topic], "--all-input-topics", "--input-topic")
    flags, bad_value, oracle, files = draw(strategy_args(w, STREAMS_STRATEGIES, csv_topics=[w.streams_in]))
    delete = ["--delete-all-internal-topics"] * (draw(st.integers(0, 3)) == 0)
    tail, execute = _tail(draw)
    return Case(("--config", w.config, "reset-streams-group", *_group_flag(draw, group), *scope, *flags, *delete, *tail),
                files=files, execute=execute, group=group, malformed=malformed or bad_value,
                names_internal=any(t in INTERNAL_TOPICS for t in named), oracle=oracle, operation="reset-streams-group")


SHARE_CASE_STRATEGIES = ("to-earliest", "to-latest", "to-datetime", "to-datetime", "to-offset", "shift-by")
"""kafka-share-groups' three, and two it has not (argparse refuses them)."""


@st.composite
def share_group_cases(draw, w: World) -> Case:
    group = draw(_group_names(w, w.share_group))
    scope, malformed, named = _scope(draw, [w.share_topic, w.topic_a], "--all-topics", "--topic")
    flags, bad_value, oracle, files = draw(strategy_args(w, SHARE_CASE_STRATEGIES))
    tail, execute = _tail(draw, ((), ("--json",)))
    return Case(("--config", w.config, "reset-share-group", *_group_flag(draw, group), *scope, *flags, *tail),
                files=files, execute=execute, group=group, malformed=malformed or bad_value,
                names_internal=any(t in INTERNAL_TOPICS for t in named), oracle=oracle, operation="reset-share-group")


def _no_execute_on(w: World, group: str, tail: list[str]) -> tuple[list[str], bool]:
    """Deleting a Streams or share group, or their offsets, is planned but never executed by the
    harness (the world could not be rebuilt in time): ``--execute`` becomes ``--dry-run``."""
    if group in (w.streams_group, w.share_group) and "--execute" in tail:
        tail = ["--dry-run" if t == "--execute" else t for t in tail]
    return tail, "--execute" in tail


@st.composite
def delete_offsets_cases(draw, w: World) -> Case:
    group = draw(_group_names(w, w.groups["offsets"]))
    real = [w.topic_a, w.topic_b, w.share_topic, w.streams_in]
    named = draw(st.one_of(st.lists(st.sampled_from(real), min_size=1, max_size=2),
                           st.lists(hostile_names(real), max_size=3)))
    tail, _ = _tail(draw, ((), ("--json",)))
    tail, execute = _no_execute_on(w, group, tail)
    return Case(("--config", w.config, "delete-offsets", *_group_flag(draw, group), *[f"--topic={t}" for t in named], *tail),
                execute=execute, group=group, names_internal=any(t in INTERNAL_TOPICS for t in named),
                operation="delete-offsets")


@st.composite
def delete_group_cases(draw, w: World) -> Case:
    group = draw(_group_names(w, w.groups["delete"]))
    delete = ["--delete-all-internal-topics"] * (draw(st.integers(0, 3)) == 0)
    tail, _ = _tail(draw, ((), ("--json",)))
    tail, execute = _no_execute_on(w, group, tail)
    return Case(("--config", w.config, "delete-group", *_group_flag(draw, group), *delete, *tail), execute=execute,
                group=group, operation="delete-group")


CASES: dict[str, Callable[[World], st.SearchStrategy[Case]]] = {
    "reset-offsets": reset_offsets_cases, "reset-offsets-plan": reset_plan_cases, "from-file": from_file_cases,
    "reset-streams-app": streams_cases, "elect-leaders": election_cases, "reassign-generate": reassign_generate_cases,
    "reassign-execute": reassign_execute_cases, "audit-show": audit_cases, "approvals-approve": approval_cases,
    "reset-streams-group": streams_group_cases, "reset-share-group": share_group_cases,
    "delete-offsets": delete_offsets_cases, "delete-group": delete_group_cases,
}


def seeds(w: World, operation: str) -> list[Case]:
    """The cases of issue 13, run first."""
    cfg, a, group = w.config, w.topic_a, w.groups["reset"]

    def reset(*args, execute=True, **fields):
        return Case(("--config", cfg, "reset-offsets", f"--group={group}", *args) + ("--execute",) * execute,
                    execute=execute, group=group, **fields)

    if operation == "reset-offsets":
        return [reset(f"--topic={a}", "--shift-by=1_000", malformed=True),
                reset(f"--topic={a}", "--to-offset=1_000", malformed=True),
                reset(f"--topic={a}", "--to-datetime=1969-12-31T23:59:59.999", oracle=("timestamp", -1)),
                reset(f"--topic={a}", "--to-datetime=1969-12-31T23:59:59.997", oracle=("timestamp", -3)),
                reset(f"--topic={a}", "--to-datetime=" + in_script("2020-09-13T12:30:00.000", "arabic-indic"), malformed=True),
                reset("--topic=__consumer_offsets", "--to-earliest", names_internal=True),
                reset(f"--topic={a}", "--by-duration=P99999999999999999999D", oracle=("duration", 99999999999999999999 * 86_400_000))]
    if operation == "reset-offsets-plan":
        g, base = w.groups["plan"], w.base_reset_plans[w.groups["plan"]][0]
        past = json.loads(json.dumps(base))
        past["partitions"][0]["new"] = past["partitions"][0]["log_end"] + 1_000_000
        missing = json.loads(json.dumps(base))
        missing["partitions"].append({**missing["partitions"][0], "topic": f"{w.prefix}.missing"})
        broken = json.loads(json.dumps(base))
        broken["partitions"] = [["not", "a", "row"]]
        return [Case(("--config", cfg, "reset-offsets", f"--group={g}", "--plan={file:plan.json}", "--execute"),
                     files=(("plan.json", json.dumps(plan).encode()),), execute=True, group=g)
                for plan in (past, missing, broken)]
    if operation == "from-file":
        g = w.groups["file"]
        return [Case(("--config", cfg, "reset-offsets", f"--group={g}", "--from-file={file:plan.csv}"), files=(("plan.csv", content),))
                for content in (f"{a},0,5\n{a},1,caf\xe9\n".encode("latin-1"), f"{a},0,{'1' * 140_000}\n".encode())]
    if operation == "reset-streams-app":
        return [Case(("--config", cfg, "reset-streams-app", f"--application-id={app}", f"--input-topics={w.app_in}"))
                for app in (f"{w.prefix}s", w.app)]
    if operation == "elect-leaders":
        return [Case(("--config", cfg, "elect-leaders", "--topic=__consumer_offsets"), names_internal=True)]
    if operation == "reassign-generate":
        return [Case(("--config", cfg, "reassign", "generate", f"--topics={w.topic_r}", f"--output={where}"))
                for where in ("{dir}", "{missing}")]
    if operation == "reassign-execute":
        no_goal = {k: v for k, v in w.base_reassign_plan.items() if k != "goal"}
        internal = {"version": 1, "partitions": [{"topic": "__consumer_offsets", "partition": 0, "replicas": w.internal_move}]}
        return [Case(("--config", cfg, "reassign", "execute", "--plan={file:reassign.json}"),
                     files=(("reassign.json", json.dumps(plan).encode()),)) for plan in (no_goal, internal)]
    if operation == "audit-show":
        return [Case(("--config", w.audit_config, "audit", "show", "--since=P99999999999D"))]
    if operation == "approvals-approve":
        plan_json = json.dumps(w.base_reset_plans[w.groups["approve"]][0])
        return [Case(("--config", cfg, "approvals", "approve", "{request}"), execute=True, group=w.groups["approve"],
                     approval=(who, plan_json)) for who in ("mallory", "victor")]
    if operation in GROUP_OPERATIONS:
        return _group_seeds(w, operation)
    raise KeyError(operation)


def _group_seeds(w: World, operation: str) -> list[Case]:
    """Each of issue 15's operations: on the active group (refused), on a group of another type, a
    valid dry run and a valid execute."""
    def case(group, *args, execute=True):
        return Case(("--config", w.config, operation, f"--group={group}", *args) + ("--execute",) * execute,
                    execute=execute, group=group, operation=operation,
                    names_internal=any(a.split("=", 1)[-1].startswith("__") for a in args))

    if operation == "reset-streams-group":
        return [case(w.live, "--all-input-topics", "--to-earliest"), case(w.share_group, "--all-input-topics", "--to-earliest"),
                case(w.streams_group, "--all-input-topics", "--to-earliest", "--delete-all-internal-topics", execute=False),
                case(w.streams_group, f"--input-topic={w.streams_in}:0", "--to-datetime=2020-09-13T12:30:00.000"),
                case(w.streams_group, "--all-input-topics", "--shift-by=-2", "--delete-all-internal-topics")]
    if operation == "reset-share-group":
        return [case(w.live, "--all-topics", "--to-earliest"), case(w.streams_group, "--all-topics", "--to-latest"),
                case(w.groups["delete"], f"--topic={w.topic_a}", "--to-earliest"),
                case(w.share_group, "--all-topics", "--to-latest", execute=False),
                case(w.share_group, f"--topic={w.share_topic}:1", "--to-earliest")]
    if operation == "delete-offsets":
        return [case(w.live, f"--topic={w.topic_b}"), case(w.groups["offsets"], "--topic=__consumer_offsets"),
                case(w.share_group, f"--topic={w.share_topic}", execute=False),
                case(w.streams_group, f"--topic={w.streams_in}", execute=False),
                case(w.groups["offsets"], f"--topic={w.topic_b}")]
    return [case(w.live), case(w.groups["delete"], "--delete-all-internal-topics"),
            case(w.streams_group, "--delete-all-internal-topics", execute=False), case(w.share_group, execute=False),
            case(w.groups["delete"])]
