"""Who may act: roles, the local users file, and :func:`authorize`, which the CLI and the
dashboard both call before any change.

Roles (:mod:`operations.roles`), each including the one before:

=========  ==================================================================================
viewer     sees everything, changes nothing (the UI shows no action controls)
operator   resets consumer group offsets, runs preferred leader elections, approves requests,
           marks consumer groups expected-idle
admin      also resets Streams applications (deletes topics), reassigns partitions, manages users
=========  ==================================================================================

The least role of each operation is declared with it (:mod:`operations.registry`).

A cluster with ``read_only: true`` refuses every change, whatever the role.

A role is read from the users file at every authorization (:meth:`UsersFile.current`), not
when the user signed in: an operator demoted to viewer, or deleted from the file, is refused at
the next action, by the dashboard, the CLI and an approval alike.

The users file (YAML, mode 0600)::

    users:
      alice: {role: operator, password: "scrypt$16384$8$1$<salt b64>$<hash b64>"}

Passwords are stored as salted scrypt hashes (16-byte random salt) and compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from operations.errors import BadInput, LoginFailed, NotAuthorized, Refused
from operations.registry import OPERATIONS
from operations.roles import ADMIN, OPERATOR, ROLES, VIEWER

APPROVE = "approve"
"""The action of approving (or rejecting) another operator's request."""
MANAGE_USERS = "manage-users"
"""The action of adding users or changing their roles."""
MARK_EXPECTED_IDLE = "mark-expected-idle"
"""The action of marking a consumer group expected-idle, or unmarking it (``kpulse/expected_idle.py``):
it changes what pages someone, not the cluster, so a read-only cluster allows it and it needs no
typed confirmation; it is audited like every change."""
ACTION_ROLES = {**{operation.name: operation.role for operation in OPERATIONS}, APPROVE: OPERATOR,
                MANAGE_USERS: ADMIN, MARK_EXPECTED_IDLE: OPERATOR}
"""The least role each action needs: every operation's, and approving and managing users."""
CHANGES_CLUSTER = frozenset(operation.name for operation in OPERATIONS)
_USER_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}\Z")
_SCRYPT = {"n": 2 ** 14, "r": 8, "p": 1}
UNKNOWN_USER = "(unknown user)"
"""The audit actor of a failed sign-in whose name names no user (it may be a mistyped password)."""
FAILED_LOGIN = "wrong user name or password"
"""The audit error of a failed sign-in (the typed name is not repeated in it)."""


@dataclass(frozen=True)
class User:
    name: str
    role: str
    """The role when the user was established; :meth:`UsersFile.current` gives the role now."""
    source: str = "no-users-file"
    """How the user was established, which says how the role is read again at each authorization:

    - ``users-file``: signed in against the users file (a password, or the CLI's OS user in it):
      the file's entry now; refused once the entry is gone;
    - ``oidc``: an identity provider said who: the file's entry of that name, else viewer;
    - ``no-users-file``: the single-user local mode (or a role a caller gives): the role as given
      while there is no users file; refused once one exists."""


def users_file(config, state_dir: Path | None = None) -> UsersFile:
    """The users file of ``config`` (a :class:`KpulseConfig`): ``dashboard.users_file``, default
    ``<state dir>/users.yaml``. The CLI, the dashboard and :class:`Operations` read the same one."""
    from kpulse import home

    return UsersFile(config.dashboard.users_file or (state_dir or home.state_dir()) / "users.yaml")


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, **_SCRYPT)
    encode = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${encode(salt)}${encode(digest)}"


def password_matches(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                                dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


class UsersFile:
    """The local users file. The constructor reads nothing; a missing file has no users. The
    parsed file is kept until the file's inode, size or modification time changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: tuple[tuple, dict[str, dict]] | None = None

    def exists(self) -> bool:
        return self.path.exists()

    def _load(self) -> dict[str, dict]:
        try:
            status = self.path.stat()
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise BadInput(f"{self.path}: cannot read the users file: {error.strerror}") from None
        version = (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
        cached = self._cache
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            data = yaml.safe_load(self.path.read_text()) or {}
            users = data.get("users") or {}
            if not isinstance(users, dict) or not all(isinstance(entry, dict) for entry in users.values()):
                raise TypeError("'users' must map each name to {role, password}")
        except (yaml.YAMLError, TypeError, AttributeError, OSError, UnicodeDecodeError) as error:
            raise BadInput(f"{self.path}: not a kpulse users file: {' '.join(str(error).split())}") from None
        for name, entry in users.items():
            if entry.get("role", VIEWER) not in ROLES:
                raise BadInput(f"{self.path}: user {name!r} has the unknown role {entry.get('role')!r}; "
                               f"one of {', '.join(ROLES)}")
        self._cache = (version, users)
        return users

    def _user(self, name: str, entry: dict) -> User:
        return User(str(name), entry.get("role", VIEWER), "users-file")

    def users(self) -> list[User]:
        return [self._user(name, entry) for name, entry in sorted(self._load().items(), key=lambda item: str(item[0]))]

    def get(self, name: str) -> User | None:
        entry = self._load().get(name)
        return None if entry is None else self._user(name, entry)

    def current(self, user: User) -> User:
        """``user`` with the role it has now (see :attr:`User.source`); :class:`NotAuthorized`
        when it may no longer act at all."""
        if user.source == "oidc":
            entry = self._load().get(user.name)
            return replace(user, role=entry.get("role", VIEWER) if entry else VIEWER)
        if user.source == "users-file":
            entry = self._load().get(user.name)
            if entry is None:
                raise NotAuthorized(f"{user.name} is no longer in the users file {self.path}")
            return replace(user, role=entry.get("role", VIEWER))
        if self.exists():
            raise NotAuthorized(f"{user.name} acts as in a setup with no users file, but {self.path} now exists: "
                                "sign in as a user of that file")
        return user

    def failed_login_actor(self, name: str) -> str:
        """The audit actor of a failed sign-in as ``name``: the name when it names a user, else
        :data:`UNKNOWN_USER` (what was typed may be a password)."""
        try:
            return name if name and name in self._load() else UNKNOWN_USER
        except BadInput:
            return UNKNOWN_USER

    def add(self, name: str, role: str, password: str) -> User:
        """Add or replace a user (new password, new role)."""
        if not _USER_NAME.match(name):
            raise BadInput(f"invalid user name {name!r}: letters, digits, '_', '.', '@', '-'")
        if role not in ROLES:
            raise BadInput(f"unknown role {role!r}; one of {', '.join(ROLES)}")
        if len(password) < 8:
            raise BadInput("password too short: at least 8 characters")
        users = self._load()
        users[name] = {"role": role, "password": hash_password(password)}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            yaml.safe_dump({"users": users}, file, sort_keys=True)
        os.replace(temporary, self.path)
        return User(name, role, "users-file")

    def authenticate(self, name: str, password: str) -> User:
        """The user when the password matches; :class:`NotAuthorized` otherwise (same message
        for an unknown user and a wrong password)."""
        entry = self._load().get(name)
        if entry is None or not password_matches(password, str(entry.get("password", ""))):
            raise LoginFailed(FAILED_LOGIN)  # never the typed name: it may be a password typed in the wrong field
        return self._user(name, entry)


def allowed(user: User, action: str) -> bool:
    needed = ACTION_ROLES.get(action)
    if needed is None:
        raise ValueError(f"unknown action {action!r}")
    return ROLES.index(user.role) >= ROLES.index(needed)


def authorize(user: User, action: str, cluster) -> None:
    """Raise unless ``user`` may do ``action`` on ``cluster`` (a :class:`ClusterConfig`)."""
    if action in CHANGES_CLUSTER and cluster.read_only:
        raise Refused(f"cluster {cluster.name!r} is read-only: {action} refused")
    if not allowed(user, action):
        raise NotAuthorized(f"{user.name} ({user.role}) may not {action}: it needs the "
                            f"{ACTION_ROLES[action]} role")


def authorize_user_admin(user: User) -> None:
    if not allowed(user, MANAGE_USERS):
        raise NotAuthorized(f"{user.name} ({user.role}) may not manage users: it needs the admin role")
