"""Who is using the dashboard, and with which role. Pure apart from reading the users file.

Sign-in modes (``$KPULSE_DASHBOARD_AUTH``, else ``oidc`` when Streamlit's secrets have an
``[auth]`` section, else ``local``):

- ``local``: the users file (``dashboard.users_file``, default ``<state dir>/users.yaml``, the
  one ``kpulse users add`` writes) with salted scrypt hashes; its role applies.
- ``oidc``: Streamlit's ``st.login`` against the identity provider of ``.streamlit/secrets.toml``;
  the provider says who, the users file says the role (an entry named by the e-mail address,
  else the ``preferred_username``/``sub`` claim); anyone else is a viewer.

Without a users file (``local`` mode): a *local setup* (the dashboard bound to a loopback address
and every cluster on this machine) runs as an admin named after the OS user, with a banner; any
other setup is view-only for everyone until a users file exists.

Each :class:`User` says how it was established (:attr:`operations.access.User.source`); the role
is read from the users file again on every run of the page (:func:`signed_in`) and by the
operations service at every action, so a demotion or a deletion takes effect at once.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from collections.abc import Mapping

from dashboard.services.sources import DashboardError
from operations.access import User, UsersFile
from operations.errors import NotAuthorized
from operations.roles import ADMIN, VIEWER

AUTH_ENV = "KPULSE_DASHBOARD_AUTH"
MODES = ("local", "oidc")
LOCAL_HOSTS = ("localhost",)


@dataclass(frozen=True)
class Identity:
    user: User
    banner: str | None = None
    """Shown on every page when set (no users file)."""


def auth_mode(environ: Mapping[str, str], has_auth_secrets: bool) -> str:
    value = (environ.get(AUTH_ENV) or "").strip().lower()
    if value and value not in MODES:
        raise DashboardError(f"{AUTH_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value or ("oidc" if has_auth_secrets else "local")


def _loopback(host: str) -> bool:
    host = host.strip().strip("[]")
    if host.lower() in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local_setup(config) -> bool:
    """The dashboard answers only this machine and every cluster runs on it."""
    servers = [s.rsplit(":", 1)[0] for c in config.clusters for s in c.bootstrap_servers.split(",") if s.strip()]
    return _loopback(config.dashboard.host) and all(_loopback(s) for s in servers)


def without_users_file(config, os_user: str, path) -> Identity:
    if is_local_setup(config):
        return Identity(User(os_user, ADMIN, "no-users-file"),
                        f"No users file: local mode. You act as admin '{os_user}' (dashboard and clusters on this "
                        f"machine only). Create {path} with `kpulse users add` to require sign-in.")
    return Identity(User(os_user, VIEWER, "no-users-file"),
                    f"No users file: view only. This dashboard or a cluster is not local, so nobody may act until "
                    f"{path} exists (`kpulse users add NAME --role admin`).")


def oidc_user(claims: Mapping[str, object], users: UsersFile) -> User:
    """The signed-in OIDC user; role from the users file entry of the same name, else viewer."""
    for claim in ("email", "preferred_username", "sub"):
        name = claims.get(claim)
        if name:
            return users.current(User(str(name), VIEWER, "oidc"))
    raise DashboardError("the identity provider sent no email, preferred_username or sub claim")


def signed_in(user: User, users: UsersFile) -> tuple[User | None, str | None]:
    """The session's user with its role now, or (``None``, why) when it may no longer be signed in
    (deleted from the users file)."""
    try:
        return users.current(user), None
    except NotAuthorized as error:
        return None, str(error)
