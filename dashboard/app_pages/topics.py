"""Topics: searchable, paged list (server side), partition detail with offsets, the topic's problem
partitions with their ELR / LastKnownElr (from the latest snapshot), the groups consuming the topic
with their lag on it, and configs. A topic whose configs kpulse may not read keeps its row and its
detail: only the config-derived values are missing, with the reason."""

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import brokers, topics
from dashboard.services.paging import DEFAULT_PAGE_SIZE, search_sort_page

SORTS = {"name": "topic", "partitions": "partitions", "under-replicated": "under_replicated", "offline": "offline"}

st.title("Topics")
with frame.shown_errors():
    partitions, catalog = frame.topic_catalog()
    search_col, sort_col, internal_col = st.columns([3, 2, 1])
    search = search_col.text_input("Search topics", key="topics-search", placeholder="part of a topic name")
    sort = sort_col.selectbox("Sort by", list(SORTS), key="topics-sort")
    show_internal = internal_col.checkbox("internal", key="topics-internal")
    listed = catalog if show_internal else catalog[~catalog["internal"]]
    first = search_sort_page(listed, search=search, search_column="topic", sort_by=SORTS[sort],
                             descending=sort != "name")
    number = components.pager("topics-page", first.matching)
    page = search_sort_page(listed, search=search, search_column="topic", sort_by=SORTS[sort],
                            descending=sort != "name", page=number)
    st.caption(f"{page.matching} of {len(catalog)} topics match · page {page.number} of {page.pages} · "
               f"{DEFAULT_PAGE_SIZE} per page · size: one copy of the data, from the brokers' log dirs")
    configs = frame.topic_configs(list(page.rows["topic"]))
    sizes = None
    with frame.shown_errors("sizes"):
        sizes = frame.topic_sizes(list(page.rows["topic"]))
    listed = topics.with_sizes(topics.with_min_isr(page.rows, configs), sizes)[topics.LISTED_COLUMNS]
    if note := topics.configs_caption(listed):
        st.caption(note)
    components.table(listed, topics.LIST_TABLE, key="topics-list")

    names = list(page.rows["topic"])
    wanted = frame.entity_param("topic")
    if wanted and wanted not in set(catalog["topic"]):
        st.warning(f"Topic '{literal.markdown(wanted)}' does not exist in cluster {literal.markdown(frame.cluster())}.")
    if wanted and wanted in set(catalog["topic"]) and wanted not in names:
        names.insert(0, wanted)
    if names:
        chosen = st.selectbox("Topic detail", names, index=names.index(wanted) if wanted in names else 0,
                              key="topics-chosen", format_func=literal.visible)
        chosen_configs = configs if configs.answers(chosen) else frame.topic_configs([chosen])
        numbers = list(partitions.loc[partitions["topic"] == chosen, "partition"])
        offsets = frame.admin().offsets(chosen, numbers)
        st.subheader(f"Partitions of {literal.markdown(chosen)}")
        components.table(topics.partition_detail(partitions, chosen, offsets, chosen_configs.min_isr(chosen)),
                         topics.DETAIL_TABLE, key="topics-partitions")
        problems = brokers.problem_partition_table(frame.snapshot(), chosen)
        if len(problems):
            st.subheader(f"Problem partitions of {literal.markdown(chosen)}")
            st.caption("From the latest collection. ELR: out-of-ISR replicas still electable without data loss; "
                       "LastKnownElr: the candidates once the partition is offline (as kafka-topics --describe "
                       "prints them).")
            components.table(problems, brokers.TOPIC_PROBLEM_TABLE, key="topics-problems")
        st.subheader(f"Groups consuming {literal.markdown(chosen)}")
        consumers = frame.topic_consumers(chosen)
        if consumers is None:
            st.caption("No group has committed offsets on this topic, and no share group reads it, in the "
                       "latest collection.")
        else:
            st.caption("Lag on this topic's partitions only, worst first; where some partitions' lag is unknown "
                       "(Lag unknown above 0), the sum is a lower bound. Each row opens its group's page, "
                       "with its history.")
            components.table(consumers, topics.CONSUMER_TABLE, key="topics-consumers")
        st.subheader("Configs")
        if why := chosen_configs.problems.get(chosen):
            st.warning(f"Configs not read: {literal.markdown(why)}", icon=":material/warning:")
        else:
            components.table(topics.config_frame(chosen_configs.configs.get(chosen) or {}), topics.CONFIG_TABLE,
                             key="topics-configs")
        actions.slot("topic", frame.cluster(), chosen)
