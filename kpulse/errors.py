"""The root of every error kpulse reports to a user as one line (no traceback)."""


class KpulseError(Exception):
    """An error caused by input or environment (bad config, unreachable broker, unknown node, ...).

    ``str(error)`` is the one line shown to the user; ``source``, when set, names the file or
    origin the error is about and is printed before it.
    """

    source: str | None = None
