"""Reading a saved plan (JSON from ``--json``, an approval request, the audit log) back into
its dataclass: every field is checked to have its type before anything uses it, so an edited
file fails in one line naming the field (``not a kpulse reset plan: partitions[2].new: expected
an integer, got '5'``), never with a ``TypeError`` from deep inside.

Integers are JSON integers (not ``true``, not ``5.0``, not ``"5"``), within the Java type's range;
strings are strings; lists are lists. Values are checked against the cluster by the executor,
not here.
"""

from __future__ import annotations

import builtins
from typing import Any, Literal, NoReturn, overload

from operations.errors import BadInput
from operations.numbers import JAVA_LONG


class PlanFields:
    """The fields of one JSON object of a plan; ``what`` names the plan in errors (``a kpulse
    reset plan``), ``path`` locates the object in it (``partitions[2].``)."""

    def __init__(self, data: object, what: str, path: str = ""):
        self.what, self.path = what, path
        if not isinstance(data, dict):
            self.fail("", f"expected an object, got {_describe(data)}")
        self.data: dict[str, Any] = data

    def fail(self, key: str, problem: str) -> NoReturn:
        where = f"{self.path}{key}".rstrip(".")
        raise BadInput(f"not {self.what}: {where + ': ' if where else ''}{problem}")

    def _value(self, key: str, optional: bool) -> Any:
        if key not in self.data:
            if optional:
                return None
            self.fail(key, "missing")
        return self.data[key]

    @overload
    def string(self, key: str, *, optional: Literal[False] = False) -> str: ...
    @overload
    def string(self, key: str, *, optional: bool) -> str | None: ...

    def string(self, key: str, *, optional: bool = False) -> str | None:
        value = self._value(key, optional)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            self.fail(key, f"expected a string, got {_describe(value)}")
        return value

    @overload
    def integer(self, key: str, *, optional: Literal[False] = False, bounds: tuple[int, int] = JAVA_LONG) -> int: ...
    @overload
    def integer(self, key: str, *, optional: bool, bounds: tuple[int, int] = JAVA_LONG) -> int | None: ...

    def integer(self, key: str, *, optional: bool = False, bounds: tuple[int, int] = JAVA_LONG) -> int | None:
        value = self._value(key, optional)
        if value is None and optional:
            return None
        return self.check_integer(key, value, bounds)

    def check_integer(self, key: str, value: Any, bounds: tuple[int, int] = JAVA_LONG) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(key, f"expected an integer, got {_describe(value)}")
        if not bounds[0] <= value <= bounds[1]:
            self.fail(key, f"{value} is out of range ({bounds[0]}..{bounds[1]})")
        return value

    def number(self, key: str) -> float:
        value = self._value(key, False)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value in (
                float("inf"), float("-inf")):
            self.fail(key, f"expected a number, got {_describe(value)}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._value(key, False)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {_describe(value)}")
        return value

    @overload
    def list(self, key: str, *, optional: Literal[False] = False) -> builtins.list[Any]: ...
    @overload
    def list(self, key: str, *, optional: bool) -> builtins.list[Any] | None: ...

    def list(self, key: str, *, optional: bool = False) -> builtins.list[Any] | None:
        value = self._value(key, optional)
        if value is None and optional:
            return None
        if not isinstance(value, (list, tuple)):  # a tuple: a plan's to_dict() not yet through JSON
            self.fail(key, f"expected a list, got {_describe(value)}")
        return list(value)

    def strings(self, key: str, *, optional: bool = False) -> builtins.list[str]:
        values = self.list(key, optional=optional) or []
        for index, value in enumerate(values):
            if not isinstance(value, str):
                self.fail(f"{key}[{index}]", f"expected a string, got {_describe(value)}")
        return values

    def integers(self, key: str, bounds: tuple[int, int] = JAVA_LONG) -> builtins.list[int]:
        return [self.check_integer(f"{key}[{i}]", v, bounds) for i, v in enumerate(self.list(key))]

    def section(self, key: str) -> PlanFields:
        return PlanFields(self._value(key, False), self.what, f"{self.path}{key}.")

    def sections(self, key: str) -> builtins.list[PlanFields]:
        return [PlanFields(item, self.what, f"{self.path}{key}[{index}].")
                for index, item in enumerate(self.list(key))]


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return "an object" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
