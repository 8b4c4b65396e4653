"""Sign-in: the gate ``app.py`` passes before any page, the signed-in user in the sidebar, sign out.
Modes and roles: :mod:`dashboard.services.identity`."""

from __future__ import annotations

import getpass
import os

import streamlit as st

from dashboard import frame, literal
from dashboard.services import identity
from dashboard.services.sources import DashboardError
from operations.access import FAILED_LOGIN, User, users_file
from operations.errors import LoginFailed

USER_KEY = "kpulse_user"
"""Session-state key of the signed-in :class:`User` (local users file)."""
SIGNED_OUT_KEY = "kpulse_signed_out"
"""Session-state key of why the session's user was signed out (deleted from the users file)."""


def _has_auth_secrets() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets.toml, or an unreadable one: not configured
        return False


def current() -> identity.Identity | None:
    """Who is signed in, with the role the users file gives now; ``None`` until someone is (the
    gate draws the sign-in then)."""
    config = frame.sources().config
    users = users_file(config)
    if identity.auth_mode(os.environ, _has_auth_secrets()) == "oidc":
        if not _has_auth_secrets():
            raise DashboardError(f"{identity.AUTH_ENV}=oidc needs Streamlit's [auth] section in "
                                 ".streamlit/secrets.toml (redirect_uri, cookie_secret, client_id, client_secret, "
                                 "server_metadata_url)")
        if not st.user.is_logged_in:
            return None
        return identity.Identity(identity.oidc_user(st.user.to_dict(), users))
    if not users.exists():
        return identity.without_users_file(config, getpass.getuser(), users.path)
    user = st.session_state.get(USER_KEY)
    if not isinstance(user, User):
        return None
    now, why = identity.signed_in(user, users)
    if now is None:
        st.session_state.pop(USER_KEY, None)
        st.session_state[SIGNED_OUT_KEY] = why
        return None
    return identity.Identity(now)


def user() -> User | None:
    """The signed-in user (pages use this to decide which controls to draw)."""
    with frame.shown_errors("sign-in"):
        who = current()
        return who.user if who else None
    return None


def gate() -> identity.Identity | None:
    """Who is signed in; when nobody is, draws the sign-in (or the config error) and returns None."""
    with frame.shown_errors("sign-in"):
        who = current()
        if who is None:
            _sign_in()
        return who
    return None


def sidebar(who: identity.Identity) -> None:
    """The signed-in user and role, sign out, and the no-users-file banner."""
    st.markdown(f":material/account_circle: **{literal.markdown(who.user.name)}** · {who.user.role}")
    if identity.auth_mode(os.environ, _has_auth_secrets()) == "oidc":
        st.button("Sign out", key="sign-out", on_click=st.logout)
    elif USER_KEY in st.session_state:
        st.button("Sign out", key="sign-out", on_click=lambda: st.session_state.pop(USER_KEY, None))
    if who.banner:
        st.warning(who.banner, icon=":material/lock_open:")


def _sign_in() -> None:
    st.title("kpulse")
    if identity.auth_mode(os.environ, _has_auth_secrets()) == "oidc":
        st.write("Sign in with your organisation's identity provider.")
        st.button("Sign in", key="oidc-sign-in", on_click=st.login, type="primary")
        return
    if st.session_state.get(SIGNED_OUT_KEY):
        st.warning(f"Signed out: {literal.markdown(st.session_state[SIGNED_OUT_KEY])}", icon=":material/logout:")
    with st.form("sign-in", border=True):
        st.markdown("**Sign in**")
        name = st.text_input("User name", key="sign-in-name")
        password = st.text_input("Password", type="password", key="sign-in-password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        users = users_file(frame.sources().config)
        try:
            st.session_state[USER_KEY] = users.authenticate(name.strip(), password)
        except LoginFailed:
            _audit_failed_login(users.failed_login_actor(name.strip()))
            # never what was typed (it may be a password typed into the name field), and the same
            # line for an unknown user and a wrong password
            st.error(FAILED_LOGIN, icon=":material/error:")
            return
        st.session_state.pop(SIGNED_OUT_KEY, None)
        st.rerun()


def _audit_failed_login(actor: str) -> None:
    """``actor``: the name when it names a user, else :data:`operations.access.UNKNOWN_USER` (a
    password typed into the name field is never stored)."""
    from operations.audit import AuditRecord

    with frame.shown_errors("audit"):
        frame.operations().audit.record(AuditRecord(cluster=frame.cluster(), actor=actor, action="login",
                                                    target="dashboard", result="denied", error=FAILED_LOGIN))
