"""The roles a user can have, lowest first, each including the ones before it (what each may do:
:mod:`operations.access`; the least role of each operation: :mod:`operations.registry`)."""

from __future__ import annotations

VIEWER = "viewer"
"""Sees everything, changes nothing."""
OPERATOR = "operator"
"""Also runs the everyday operations and approves requests."""
ADMIN = "admin"
"""Also runs the destructive operations and manages users."""
ROLES = (VIEWER, OPERATOR, ADMIN)
"""Every role, lowest first."""
