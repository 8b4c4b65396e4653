"""SLO definitions: a strict YAML file, close to OpenSLO, validated into plain dataclasses. Pure.

A file looks like this (``spark_jobs/slo-definitions.yaml`` is the shipped default)::

    lateness: 10m                 # samples this late are still counted by the next run
    minEvents: 1000               # optional: Occurrences SLOs page only from this many events in the window
    slos:
      - name: consumer-freshness  # unique, [a-z0-9-]
        description: ...
        scope: consumer_group     # cluster | consumer_group | streams_app | broker
        indicator: consumer_freshness_minutes
        budgetingMethod: Timeslices   # OpenSLO: Occurrences | Timeslices
        timeSliceTarget: 1.0      # Timeslices: a minute is good when good/valid samples >= this
        target: 0.99              # OpenSLO objectives[].target
        timeWindow: 30d           # OpenSLO timeWindow[].duration, always rolling
        minEvents: 500            # Occurrences only, optional: overrides the file's minEvents
        params: {lag_seconds_threshold: 120}
        overrides:                # per entity (group id, application id, broker id, cluster name)
          - entity: billing
            target: 0.999
            params: {lag_seconds_threshold: 30}

Every key is checked: an unknown, missing or mistyped field raises :class:`SloDefinitionError`
whose one-line message starts with the field's path (``slos[1].timeWindow: ...``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from collections.abc import Mapping

import yaml

from kpulse.errors import KpulseError
from spark_jobs.indicators import INDICATORS
from spark_jobs.burn import BURN_WINDOWS

DEFAULT_DEFINITIONS = Path(__file__).with_name("slo-definitions.yaml")
SCOPES = ("cluster", "consumer_group", "streams_app", "broker")
BUDGETING_METHODS = ("Occurrences", "Timeslices")
"""RatioTimeslices (mean of per-minute ratios) is not supported: ``slo_minute.good`` is an integer."""
MINUTES_PER_UNIT = {"m": 1, "h": 60, "d": 1440, "w": 10080}
_DURATION = re.compile(r"([1-9][0-9]*)([mhdw])\Z")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\Z")


class SloDefinitionError(KpulseError):
    """The SLO definitions cannot be used; the message starts with the field's path."""

    def __init__(self, message: str, *, source: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.source = source


@dataclass(frozen=True)
class EntityOverride:
    entity: str
    target: float | None = None
    time_slice_target: float | None = None
    params: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SloDefinition:
    name: str
    scope: str
    indicator: str
    budgeting_method: str
    target: float
    """Objective, e.g. 0.999; the error budget is ``1 - target``."""
    window: str
    """Rolling window as written, e.g. ``30d``."""
    window_minutes: int
    time_slice_target: float = 1.0
    params: Mapping[str, float | None] = field(default_factory=dict)
    """Every parameter of the indicator: defaults, then the file's values."""
    overrides: tuple[EntityOverride, ...] = ()
    description: str = ""
    min_events: int | None = None
    """Occurrences: valid events the window needs before the SLO can page or its budget be
    exhausted; None: the file's ``minEvents``, else ``burn.default_min_events`` of the objective."""

    @property
    def table(self) -> str:
        return INDICATORS[self.indicator].table

    def override(self, entity: str) -> EntityOverride | None:
        return next((o for o in self.overrides if o.entity == entity), None)


@dataclass(frozen=True)
class SloDefinitions:
    slos: tuple[SloDefinition, ...]
    lateness_minutes: int = 10
    source: str = "<memory>"
    min_events: int | None = None
    """The file's ``minEvents``: the default of every Occurrences SLO without its own."""

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(sorted({slo.table for slo in self.slos}))

    @property
    def longest_window_minutes(self) -> int:
        """The longest window a status row sums: an SLO's, or the longest burn window (3 days)
        when every SLO's is shorter (an update read back less, and its 3-day burn rates then
        differed from a full run's)."""
        return max(self.window_lengths)

    @property
    def window_lengths(self) -> tuple[int, ...]:
        """Every window a status row sums, in minutes: the burn windows and each SLO's own."""
        return tuple(sorted({*BURN_WINDOWS.values(), *(slo.window_minutes for slo in self.slos)}))


def duration_minutes(text: Any, path: str) -> int:
    """``5m``, ``2h``, ``30d``, ``1w`` -> minutes."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if not match:
        raise SloDefinitionError(f"{path}: must be a duration like 30d, 6h or 10m, got {text!r}")
    return int(match.group(1)) * MINUTES_PER_UNIT[match.group(2)]


def load_definitions(path: str | Path | None = None) -> SloDefinitions:
    """Read and validate a definitions file (default: the shipped one)."""
    path = Path(path) if path is not None else DEFAULT_DEFINITIONS
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise SloDefinitionError(f"cannot read SLO definitions: {error.strerror or error}", source=str(path)) from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise SloDefinitionError(f"not valid YAML{line}: {getattr(error, 'problem', error)}",
                                 source=str(path)) from None
    try:
        return parse_definitions(data, source=str(path))
    except SloDefinitionError as error:
        error.source = str(path)
        raise


def parse_definitions(data: Any, *, source: str = "<memory>") -> SloDefinitions:
    """Validate a parsed YAML document."""
    top = _mapping(data, "", ("slos", "lateness", "minEvents"), required=("slos",))
    lateness = duration_minutes(top.get("lateness", "10m"), "lateness")
    min_events = _whole(top["minEvents"], "minEvents") if "minEvents" in top else None
    items = top["slos"]
    if not isinstance(items, list) or not items:
        raise SloDefinitionError("slos: must be a non-empty list of SLO definitions")
    slos = tuple(_slo(item, f"slos[{index}]") for index, item in enumerate(items))
    seen: set[str] = set()
    for index, slo in enumerate(slos):
        if slo.name in seen:
            raise SloDefinitionError(f"slos[{index}].name: duplicate SLO name {slo.name!r}")
        seen.add(slo.name)
    return SloDefinitions(slos, lateness, source, min_events)


_SLO_KEYS = ("name", "description", "scope", "indicator", "budgetingMethod", "timeSliceTarget", "target",
             "timeWindow", "params", "overrides", "minEvents")


def _slo(data: Any, path: str) -> SloDefinition:
    item = _mapping(data, path, _SLO_KEYS, required=("name", "scope", "indicator", "budgetingMethod", "target",
                                                      "timeWindow"))
    name = item["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise SloDefinitionError(f"{path}.name: must be lowercase letters, digits and '-', got {name!r}")
    scope = _choice(item["scope"], SCOPES, f"{path}.scope")
    indicator_name = _choice(item["indicator"], tuple(INDICATORS), f"{path}.indicator")
    indicator = INDICATORS[indicator_name]
    if indicator.scope != scope:
        raise SloDefinitionError(f"{path}.scope: indicator {indicator_name} is about a {indicator.scope}, "
                                 f"not a {scope}")
    method = item["budgetingMethod"]
    if method == "RatioTimeslices":
        raise SloDefinitionError(f"{path}.budgetingMethod: RatioTimeslices is not supported; use Timeslices "
                                 "or Occurrences")
    method = _choice(method, BUDGETING_METHODS, f"{path}.budgetingMethod")
    if "timeSliceTarget" in item and method != "Timeslices":
        raise SloDefinitionError(f"{path}.timeSliceTarget: only for budgetingMethod Timeslices")
    if "minEvents" in item and method != "Occurrences":
        raise SloDefinitionError(f"{path}.minEvents: only for budgetingMethod Occurrences (a Timeslices budget "
                                 "is a number of bad minutes of the whole window)")
    min_events = _whole(item["minEvents"], f"{path}.minEvents") if "minEvents" in item else None
    window_minutes = duration_minutes(item["timeWindow"], f"{path}.timeWindow")
    if window_minutes < 60:
        raise SloDefinitionError(f"{path}.timeWindow: must be at least 1h, got {item['timeWindow']}")
    description = item.get("description", "")
    if not isinstance(description, str):
        raise SloDefinitionError(f"{path}.description: must be text")
    params = {**indicator.params, **_params(item.get("params", {}), indicator_name, f"{path}.params")}
    overrides = _overrides(item.get("overrides", []), indicator_name, method, f"{path}.overrides")
    return SloDefinition(
        name=name, scope=scope, indicator=indicator_name, budgeting_method=method,
        target=_fraction(item["target"], f"{path}.target", open_top=True),
        window=item["timeWindow"], window_minutes=window_minutes,
        time_slice_target=_fraction(item.get("timeSliceTarget", 1.0), f"{path}.timeSliceTarget"),
        params=MappingProxyType(params), overrides=overrides, description=description, min_events=min_events)


def _overrides(data: Any, indicator: str, method: str, path: str) -> tuple[EntityOverride, ...]:
    if not isinstance(data, list):
        raise SloDefinitionError(f"{path}: must be a list of {{entity: ..., target/timeSliceTarget/params}}")
    result: list[EntityOverride] = []
    for index, raw in enumerate(data):
        where = f"{path}[{index}]"
        item = _mapping(raw, where, ("entity", "target", "timeSliceTarget", "params"), required=("entity",))
        entity = item["entity"]
        if isinstance(entity, int) and not isinstance(entity, bool):
            entity = str(entity)  # broker ids may be written as numbers
        if not isinstance(entity, str) or not entity:
            raise SloDefinitionError(f"{where}.entity: must be a group id, application id, broker id or cluster name")
        if any(o.entity == entity for o in result):
            raise SloDefinitionError(f"{where}.entity: {entity!r} is overridden twice")
        if "timeSliceTarget" in item and method != "Timeslices":
            raise SloDefinitionError(f"{where}.timeSliceTarget: only for budgetingMethod Timeslices")
        if len(item) == 1:
            raise SloDefinitionError(f"{where}: overrides nothing (give target, timeSliceTarget or params)")
        result.append(EntityOverride(
            entity=entity,
            target=_fraction(item["target"], f"{where}.target", open_top=True) if "target" in item else None,
            time_slice_target=(_fraction(item["timeSliceTarget"], f"{where}.timeSliceTarget")
                               if "timeSliceTarget" in item else None),
            params=MappingProxyType(_params(item.get("params", {}), indicator, f"{where}.params"))))
    return tuple(result)


def _params(data: Any, indicator: str, path: str) -> dict[str, float]:
    known = tuple(INDICATORS[indicator].params)
    if not known and data:
        raise SloDefinitionError(f"{path}: indicator {indicator} takes no parameters")
    item = _mapping(data, path, known)
    result = {}
    for key, value in item.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise SloDefinitionError(f"{path}.{key}: must be a number >= 0, got {value!r}")
        result[key] = float(value)
    return result


def _mapping(data: Any, path: str, keys: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
    where = path or "the definitions file"
    if data is None and not required:
        return {}
    if not isinstance(data, dict):
        raise SloDefinitionError(f"{where}: must be a mapping, got {type(data).__name__}")
    for key in data:
        if key not in keys:
            close = difflib.get_close_matches(str(key), keys, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(keys) or 'none'})"
            raise SloDefinitionError(f"{_join(path, key)}: unknown field{hint}")
    for key in required:
        if key not in data or data[key] is None:
            raise SloDefinitionError(f"{_join(path, key)}: required field is missing")
    return dict(data)


def _choice(value: Any, choices: tuple[str, ...], path: str) -> str:
    if value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise SloDefinitionError(f"{path}: must be one of {', '.join(choices)}, got {value!r}{hint}")
    return value


def _fraction(value: Any, path: str, open_top: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1
    if not ok or (open_top and value == 1):
        bound = "below 1" if open_top else "at most 1"
        raise SloDefinitionError(f"{path}: must be a number above 0 and {bound}, got {value!r}")
    return float(value)


def _whole(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SloDefinitionError(f"{path}: must be a whole number >= 1, got {value!r}")
    return value


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)
