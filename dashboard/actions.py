"""Where operations (offset reset, Streams reset, leader election, reassignment) meet the pages.

Every entity page calls :func:`slot` at one obvious place (an "Actions" section): the group,
Streams app, topic and broker pages. Until the operations UI lands, the slot shows the CLI
command that does the same with a dry run first; the operations issue replaces the body of
:func:`slot` with its buttons and confirmation dialogs (opened from a ``st.session_state`` flag)."""

from __future__ import annotations

import streamlit as st

DRY_RUN_COMMANDS = {
    "group": "kpulse reset-offsets --cluster {cluster} --group {name} --all-topics --to-latest",
    "streams": "kpulse reset-streams-app --cluster {cluster} --application-id {name} --input-topics <topics>",
    "topic": "kpulse elect-leaders --cluster {cluster} --topic {name}",
    "broker": "kpulse reassign generate --cluster {cluster} --help",
}


def slot(kind: str, cluster: str, name: str) -> None:
    """The Actions section of an entity page (``kind``: group, streams, topic or broker)."""
    with st.container(border=True, key=f"actions-{kind}"):
        st.markdown("**Actions**")
        st.caption("Plan first (dry run), then execute from the command line:")
        st.code(DRY_RUN_COMMANDS[kind].format(cluster=cluster, name=name), language="bash")
