"""Who may act: roles, the local users file, and :func:`authorize`, which the CLI and the
dashboard both call before any change.

Roles, each including the one before:

=========  ==================================================================================
viewer     sees everything, changes nothing (the UI shows no action controls)
operator   resets consumer group offsets, runs preferred leader elections, approves requests
admin      also resets Streams applications (deletes topics), reassigns partitions, manages users
=========  ==================================================================================

A cluster with ``read_only: true`` refuses every change, whatever the role.

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
from dataclasses import dataclass
from pathlib import Path

import yaml

from operations.errors import BadInput, LoginFailed, NotAuthorized, Refused

ROLES = ("viewer", "operator", "admin")
ACTION_ROLES = {
    "reset-offsets": "operator",
    "elect-leaders": "operator",
    "approve": "operator",
    "reset-streams-app": "admin",
    "reassign": "admin",
    "manage-users": "admin",
}
"""The least role each action needs."""
CHANGES_CLUSTER = frozenset({"reset-offsets", "elect-leaders", "reset-streams-app", "reassign"})
_USER_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}\Z")
_SCRYPT = {"n": 2 ** 14, "r": 8, "p": 1}


@dataclass(frozen=True)
class User:
    name: str
    role: str


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
    """The local users file. The constructor reads nothing; a missing file has no users."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def _load(self) -> dict[str, dict]:
        if not self.path.exists():
            return {}
        try:
            data = yaml.safe_load(self.path.read_text()) or {}
            users = data.get("users") or {}
            if not isinstance(users, dict):
                raise TypeError("'users' must be a mapping")
        except (yaml.YAMLError, TypeError, AttributeError, OSError) as error:
            raise BadInput(f"{self.path}: not a kpulse users file: {' '.join(str(error).split())}") from None
        return users

    def users(self) -> list[User]:
        return [User(name, entry.get("role", "viewer")) for name, entry in sorted(self._load().items())]

    def get(self, name: str) -> User | None:
        entry = self._load().get(name)
        return None if entry is None else User(name, entry.get("role", "viewer"))

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
        return User(name, role)

    def authenticate(self, name: str, password: str) -> User:
        """The user when the password matches; :class:`NotAuthorized` otherwise (same message
        for an unknown user and a wrong password)."""
        entry = self._load().get(name)
        if entry is None or not password_matches(password, str(entry.get("password", ""))):
            raise LoginFailed(f"wrong user name or password for {name!r}")
        return User(name, entry.get("role", "viewer"))


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
    if not allowed(user, "manage-users"):
        raise NotAuthorized(f"{user.name} ({user.role}) may not manage users: it needs the admin role")
