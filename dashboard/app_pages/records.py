"""Records: the next records of one partition of a group, from its committed offset (a share group's
start offset), as the consumer will read them: offset, timestamp, key, headers, value, size,
compression, producer, transaction markers, and what the read noticed (records deleted by retention
before the group's offset, an aborted transaction). Opened from a partition's row on a group page,
from a STALL/ERR alert and its runbook (``?group=`` or ``?sharegroup=``, ``&topic=&partition=``;
without a partition, the group's worst one).

Keys, values and header values are hidden until an operator reveals them where the cluster's
``records.visible_topics`` allows (audited: who, which partition, which offsets); masks apply to
whatever is shown. Everything Kafka supplies is shown as text. The read is bounded (records, bytes,
seconds: the cluster's ``records`` config) and kept only in this session's state; "Skip this
record" and "Skip to offset N" plan the skip-records operation, confirmed and audited like every
other."""

import streamlit as st

from dashboard import actions, action_forms, auth, components, frame, literal
from dashboard.services import records
from dashboard.services.records import GroupKind
from kpulse.records.display import show_record, transaction_text
from operations.access import allowed
from operations.records_access import reveal, reveal_refusal_for
from operations.registry import SKIP_RECORDS, for_entity, operation

# Session state (comments, not docstrings: Streamlit's magic would write a bare string to the page):
# the last read, as (what was read: cluster, kind, group, topic, partition, count; the RecordsRead).
READ_KEY = "records-read"
# The read whose contents this session revealed (after an audited reveal), as READ_KEY's first item.
REVEALED_KEY = "records-revealed"
# Set by a skip button's callback: plan the skip with the prefilled form on this run.
PLAN_SKIP_KEY = "records-plan-skip"


def target() -> tuple[GroupKind, str] | None:
    """(the kind of group, its id) the query names, or None."""
    for kind, param in records.PARAMS.items():
        if name := frame.entity_param(param):
            return kind, name
    return None


def choose_partition(kind: GroupKind, group_id: str) -> records.PartitionChoice | None:
    """The partition shown: the query's, else the group's worst; a picker over the group's partitions."""
    entry = records.group_entry(frame.snapshot(), kind, group_id)
    choices = records.partition_choices(entry, kind) if entry else []
    topic, partition = frame.entity_param("topic"), frame.entity_param("partition")
    wanted = records.chosen(choices, topic, partition)
    if wanted is None and topic is not None and partition is not None:
        if not partition.isascii() or not partition.isdigit():
            st.error(f"Partition '{literal.markdown(partition)}' is not a partition number.", icon=":material/error:")
            return None
        wanted = records.PartitionChoice(topic, int(partition), None, None, None)  # not in the snapshot: read anyway
        choices = [wanted, *choices]
    if entry is None:
        st.warning(f"{'Share group' if kind == 'share' else 'Consumer group'} '{literal.markdown(group_id)}' is not "
                   "in the latest snapshot (unknown, deleted or not monitored).", icon=":material/warning:")
    if not choices:
        st.info("No partition to read: the snapshot has no partition of this group.")
        return None
    return st.selectbox("Partition", choices, index=choices.index(wanted) if wanted in choices else 0,
                        key=f"records-partition-{kind}-{group_id}",
                        format_func=lambda c: literal.visible(records.choice_label(c, kind)))


def read(kind: GroupKind, group_id: str, choice: records.PartitionChoice, count: int):
    """(what was read, the read) of this partition, kept in this session's state (read again on "Read
    again", or for another partition or count)."""
    what = (frame.cluster(), kind, group_id, choice.topic, choice.partition, count)
    again = st.button("Read again", key="records-again", icon=":material/refresh:")
    kept = st.session_state.get(READ_KEY)
    if kept is None or kept[0] != what or again:
        st.session_state.pop(READ_KEY, None)
        st.session_state.pop(REVEALED_KEY, None)
        with st.spinner("Reading the partition…"):
            kept = (what, frame.read_records(kind, group_id, choice.topic, choice.partition, count))
        st.session_state[READ_KEY] = kept
    return kept


def reveal_slot(what, result, cluster_config, topic: str) -> bool:
    """Whether this session sees the contents of ``result``: the hidden notice and, where the config
    and the role allow it, the reveal button (the reveal is audited before anything is shown)."""
    if st.session_state.get(REVEALED_KEY) == what:
        st.caption("Keys, values and header values revealed to you (audited); the config's masks applied.")
        return True
    user = auth.user()
    refusal = "nobody is signed in" if user is None else reveal_refusal_for(user, cluster_config, topic)
    if refusal is not None:
        st.info(f"Keys, values and header values are hidden: {literal.markdown(refusal)}.", icon=":material/lock:")
        return False
    st.info("Keys, values and header values are hidden until you reveal them; the reveal is written to the audit "
            "log (who, this partition, these offsets).", icon=":material/lock:")
    if user is not None and st.button("Reveal keys and values (audited)", key="records-reveal",
                                      icon=":material/visibility:"):
        operations = frame.operations()
        with frame.shown_errors("reveal"):
            reveal(operations.audit, operations.users, user, cluster_config, topic, result.partition,
                   [r.offset for r in result.records])
            st.session_state[REVEALED_KEY] = what
            st.rerun()
    return False


def record_detail(shown, start_words: str) -> None:
    """The record the group reads next, whole (up to the display's limit), as plain text."""
    record = shown.record
    st.markdown(f"**The record at offset {record.offset:,}** ({literal.markdown(start_words)})")
    facts = [f"timestamp {record.timestamp:%Y-%m-%d %H:%M:%S.%f}"[:-3] + f" UTC ({record.timestamp_type})"
             if record.timestamp is not None else "no timestamp",
             f"{record.size:,} B", f"compression {record.compression}"]
    if record.producer_id is not None:
        facts.append(f"producer id {record.producer_id}, epoch {record.producer_epoch}, sequence {record.sequence}")
    if (transaction := transaction_text(record)) != "-":
        facts.append(f"transaction: {transaction}")
    st.caption(" · ".join(facts))
    st.markdown(f"Key · {shown.key.describe()}")
    if shown.key.text:
        st.text(records.block_text(shown.key.text))
    st.markdown(f"Headers · {len(shown.headers)}")
    for name, value in shown.headers:
        st.text(records.cell_text(name, 400) + " = " + records.contents_text(value, 2000))
    st.markdown(f"Value · {shown.value.describe()}")
    if shown.value.text:
        st.text(records.block_text(shown.value.text))


def skip_slot(kind: GroupKind, group_id: str, group_type: str | None, choice, result) -> None:
    """"Skip this record" and "Skip to offset N": the skip-records operation's form, prefilled, planned
    at once (nothing changes), then the action flow's execute, typed confirmation and audit."""
    if not any(entry.name == SKIP_RECORDS for entry in for_entity("group", group_type)):
        return
    user = auth.user()
    if user is None or not allowed(user, SKIP_RECORDS):
        st.caption(f"Skipping a record needs the {operation(SKIP_RECORDS).role} role"
                   + (f"; you are a {user.role}." if user else "."))
        return
    first = records.first_record(result)
    start = choice.offset if choice.offset is not None else (first.offset if first else None)
    if start is None:
        return
    cluster = frame.cluster()
    operations = frame.operations()
    read_only = operations.config.cluster(cluster).read_only
    key = f"op-records-{cluster}-{kind}-{group_id}"
    targets = records.skip_targets(result, start)

    def prefill(to_offset: int | None) -> None:
        st.session_state.update(action_forms.skip_prefill(key, choice.topic, choice.partition, start, to_offset))
        st.session_state.pop(key, None)
        st.session_state[PLAN_SKIP_KEY] = True

    with st.container(border=True, key="records-skip"):
        st.markdown("**Skip**")
        left, middle, right = st.columns([2, 2, 3])
        left.button(f"Skip this record (offset {start:,})", key="records-skip-one", disabled=read_only,
                    on_click=prefill, args=(None,), icon=":material/skip_next:")
        if targets:
            chosen = middle.selectbox("Skip to offset", targets, key="records-skip-to", label_visibility="collapsed",
                                      format_func=lambda offset: f"to offset {offset:,}")
            middle.button(f"Skip to offset {chosen:,}", key="records-skip-many", disabled=read_only,
                          on_click=prefill, args=(chosen,), icon=":material/fast_forward:")
        right.caption("Plans a change of this partition's committed offset only; refused while the group has "
                      "members: stop its consumers first, then execute.")
        form = action_forms.FORMS[SKIP_RECORDS]
        with st.form(f"{key}-form", border=False):
            values = form.draw(key, group_id, read_only)
            submitted = st.form_submit_button("Plan (changes nothing)", disabled=read_only, icon=":material/list_alt:")
        if submitted or st.session_state.pop(PLAN_SKIP_KEY, False):
            st.session_state.pop(key, None)
            with frame.shown_errors("plan"):
                st.session_state[key] = {"plan": form.plan(operations, cluster, group_id, values),
                                         "options": form.options(values)}
        if state := st.session_state.get(key):
            actions.show(key, state, operations, read_only)


st.title("Records")
with frame.shown_errors():
    named = target()
    if named is None:
        st.info("Open a group's partition from its page (the Records link of a partition's row) or from an alert.")
    else:
        kind, group_id = named
        entry = records.group_entry(frame.snapshot(), kind, group_id)
        st.subheader(literal.markdown(group_id))
        page, param = ("app_pages/share_groups.py", "sharegroup") if kind == "share" else ("app_pages/groups.py",
                                                                                          "group")
        st.page_link(page, label="Back to the group's page", icon=":material/arrow_back:",
                     query_params={param: group_id})
        choice = choose_partition(kind, group_id)
        if choice is not None:
            cluster_config = frame.sources().config.cluster(frame.cluster())
            bounds = cluster_config.records
            count = int(st.number_input("Records to read", min_value=1, max_value=bounds.max_records,
                                        value=min(10, bounds.max_records), key="records-count"))
            what, result = read(kind, group_id, choice, count)
            st.caption(literal.markdown(records.read_caption(result, count)))
            st.caption(f"Read with an assign-only consumer that has no group id (it commits nothing and joins no "
                       f"group), at most {bounds.max_records:,} records, {bounds.max_bytes:,} bytes and "
                       f"{bounds.timeout_seconds:g} s per read; nothing read is logged or kept beyond this page.")
            if result.error:
                st.error(literal.markdown(result.error), icon=":material/error:")
            for note in result.notes:
                st.warning(literal.markdown(note), icon=":material/info:")
            revealed = reveal_slot(what, result, cluster_config, choice.topic)
            shown = [show_record(r, reveal=revealed, mask=bounds.mask) for r in result.records]
            first = records.first_record(result)
            if first is not None:
                record_detail(next(s for s in shown if s.record is first), result.start_from)
            if shown:
                components.table(records.records_frame(shown), records.RECORD_TABLE, key="records-table")
            elif not result.error:
                st.info("No record to show from this offset: the group is at the end of the partition.")
            if first is not None or choice.offset is not None:
                group_type = "share" if kind == "share" else (entry or {}).get("type")
                skip_slot(kind, group_id, group_type, choice, result)
