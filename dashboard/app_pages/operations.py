"""Operations: approval requests waiting for a second operator, reassignments in progress, and
the audit log (every attempt to change a cluster, refused ones included)."""

import time

import streamlit as st

from dashboard import actions, auth, components, frame, literal
from dashboard.services import plans
from operations.access import APPROVE, allowed
from operations.errors import BadInput
from operations.registry import SavedPlanType, operation

WINDOWS = {"1 hour": 3600, "1 day": 86400, "7 days": 7 * 86400, "30 days": 30 * 86400}
# (comments, not attribute docstrings: Streamlit's magic would write a bare string to the page)
APPROVE_KEY = "ops-approving"  # session-state key of the request being approved (its plan, then its outcome)

st.title("Operations")
user = auth.user()
cluster = frame.cluster()

with frame.shown_errors("approvals"):
    operations = frame.operations()
    st.subheader("Approval requests")
    pending = operations.approvals.pending(cluster)
    if not pending:
        st.caption(f"No request waits for approval on cluster {literal.markdown(cluster)}.")
    else:
        components.table(plans.approvals_table(pending), plans.APPROVAL_TABLE, key="ops-approvals")
        chosen = st.selectbox("Request", [r.id for r in pending], key="ops-request",
                              format_func=lambda i: next(literal.visible(f"{r.id} · {r.action} {r.target} by "
                                                                         f"{r.requested_by}")
                                                         for r in pending if r.id == i))
        request = next(r for r in pending if r.id == chosen)
        entry = operation(request.action)
        if not isinstance(entry.plan_type, SavedPlanType):  # a request file written by hand
            raise BadInput(f"{request.action} does not take approval")
        plan = entry.plan_type.from_dict(request.plan)
        st.caption(entry.summary(plan, literal.markdown))
        for number, (title, table) in enumerate(entry.tables(plan).items()):
            if number == 0 or not table.empty:
                st.markdown(title)
                components.table(table, plans.plan_columns(table), key=f"ops-request-plan-{number}")
        if user is None or not allowed(user, APPROVE):
            st.caption("Approving needs the operator role.")
        elif request.requested_by == user.name:
            st.caption("You requested this: another operator must approve it.")
        else:
            approve, reject = st.columns(2)
            if approve.button("Approve and run…", key="ops-approve", type="primary"):
                st.session_state[APPROVE_KEY] = {"plan": plan, "request_id": request.id}
                st.session_state[actions.CONFIRM_KEY] = APPROVE_KEY
            if reject.button("Reject", key="ops-reject"):
                with frame.shown_errors("reject"):
                    operations.reject(user, request.id)
                    st.rerun()
    approving = st.session_state.get(APPROVE_KEY)
    if approving:
        if st.session_state.get(actions.CONFIRM_KEY) == APPROVE_KEY:
            actions.confirm(APPROVE_KEY)
        if approving.get("error"):
            st.error(literal.markdown(approving["error"]), icon=":material/error:")
        if approving.get("done") is not None:
            actions.result(APPROVE_KEY, approving["done"], approving["plan"], operations)

window = WINDOWS[st.segmented_control("History", list(WINDOWS), default="1 day", key="ops-window") or "1 day"]
with frame.shown_errors("audit log"):
    rows = frame.operations().audit.read(since=frame.now() - window, cluster=cluster)
    open_moves = plans.open_reassignments(rows)
    st.subheader("Reassignments in progress")
    if not open_moves:
        st.caption("None started from kpulse in this window.")
    for number, plan in enumerate(open_moves):
        st.markdown(f"{literal.markdown(plan.goal)} · planned "
                    f"{time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(plan.planned_at))}")
        actions.reassignment_progress(plan, f"ops-moves-{number}")
    st.subheader("Audit log")
    table = plans.audit_table(rows)
    st.caption(f"{len(table)} record(s) on cluster {literal.markdown(cluster)} · newest first")
    components.table(table, plans.AUDIT_TABLE, key="ops-audit")
    if len(table):
        chosen = st.selectbox("Details of", list(table["action_id"]), key="ops-audit-row",
                              format_func=lambda i: " · ".join(literal.visible(str(v)) for v in table.loc[
                                  table["action_id"] == i, ["time", "actor", "action", "target", "result"]].iloc[0]))
        details = plans.audit_details(rows, chosen)
        left, middle, right = st.columns(3)
        for column, name in ((left, "plan"), (middle, "before"), (right, "after")):
            column.markdown(name)
            column.json(details[name] or {}, expanded=False)
