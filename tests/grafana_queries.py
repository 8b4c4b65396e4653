"""A Grafana dashboard's queries as Grafana sends them to Prometheus, and whether each returns data.

Used by ``tests/test_grafana_dashboards.py`` (kpulse's dashboards under docker/grafana/dashboards/,
and the peers' dashboards kept as test data under tests/data/grafana/) and by
``bench/peer_dashboards.py`` (the same counts against any exporter).

What Grafana does before a query reaches Prometheus, done here the same way:

- **Template variables**, resolved in their order (a later one may use an earlier one): a query
  variable's options come from ``label_values(selector, label)`` (the label's values on the series
  the selector matches, over the dashboard's time range) or ``query_result(expr)`` (each series of
  the instant query as ``name{label="value",...} value timestamp``), filtered and captured by the
  variable's ``regex``, sorted as its ``sort`` says. With ``includeAll`` the value is All (Grafana's
  first option): its ``allValue`` when set, else every option; otherwise the first option.
- **Interpolation** (Grafana's Prometheus data source, ``interpolateQueryExpr``): the value of a
  variable that is neither multi nor includeAll is inserted with backslashes and single quotes
  escaped; a multi or includeAll variable's values are regex-escaped and joined as ``(a|b)``;
  ``allValue`` is inserted as it is. ``$__interval``, ``$__rate_interval`` (max of ``$__interval`` +
  the scrape interval and 4 scrape intervals, as Grafana computes it from the data source's
  ``timeInterval``), ``$__range`` (the dashboard's range) and their ``_s``/``_ms`` forms.
- **Repeated panels** (``repeat: variable``): one copy per value of the variable, each with that
  value alone.

A query "returns data" when its instant query at now has at least one series: what a panel
showing the current state needs (a range query would also count data that is gone)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

DATA_DIR = Path(__file__).resolve().parent / "data" / "grafana"
PEER_DASHBOARDS = {"kafka_exporter": DATA_DIR / "kafka_exporter.yaml",
                   "kafka_lag_exporter": DATA_DIR / "kafka_lag_exporter.yaml"}
"""The peers' dashboards kept as test data: kafka_exporter's overview, kafka-lag-exporter's."""
ALL = "$__all"


class PrometheusApi(Protocol):
    """What is asked of Prometheus (``tests.prometheus_server.PrometheusServer`` answers it): the
    ``data`` of a successful ``/api/v1/...`` answer."""

    def get(self, path: str, **params: str) -> Any: ...


@dataclass(frozen=True)
class Variable:
    """A template variable of type query (the other types carry no PromQL)."""
    name: str
    query: str
    regex: str = ""
    include_all: bool = False
    multi: bool = False
    all_value: str | None = None
    sort: int = 0


@dataclass(frozen=True)
class Panel:
    id: int
    title: str
    queries: tuple[str, ...]
    repeat: str | None = None
    not_applicable: str | None = None
    """Why the panel cannot apply to kpulse (peer dashboards only); it is not evaluated."""


@dataclass(frozen=True)
class Dashboard:
    title: str
    variables: tuple[Variable, ...]
    panels: tuple[Panel, ...]
    range_seconds: int
    source: str


def _range_seconds(time_from: str) -> int:
    match = re.fullmatch(r"now-(\d+)([smhd])", time_from)
    if not match:
        raise ValueError(f"a relative time range like now-6h expected, got {time_from!r}")
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def peer_dashboard(path: Path) -> Dashboard:
    """A peer's dashboard from its test-data file (the format of tests/data/grafana/*.yaml)."""
    doc = yaml.safe_load(path.read_text())
    variables = tuple(Variable(v["name"], v["query"], v.get("regex") or "", bool(v.get("includeAll")),
                               bool(v.get("multi")), v.get("allValue"), int(v.get("sort") or 0))
                      for v in doc["variables"])
    panels = tuple(Panel(p["id"], p["title"], tuple(p["queries"]), p.get("repeat"), p.get("not_applicable"))
                   for p in doc["panels"])
    return Dashboard(doc["title"], variables, panels, _range_seconds(doc["time_from"]), doc["source"])


def all_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every panel of a Grafana dashboard's ``panels``, those inside collapsed rows too."""
    found = []
    for panel in panels:
        found.append(panel)
        found += all_panels(panel.get("panels") or [])
    return found


def grafana_dashboard(doc: dict[str, Any], source: str = "") -> Dashboard:
    """The queries of a Grafana dashboard JSON document (kpulse's own)."""
    variables = []
    for v in doc.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        query = v["query"]["query"] if isinstance(v.get("query"), dict) else v["query"]
        variables.append(Variable(v["name"], query, v.get("regex") or "", bool(v.get("includeAll")),
                                  bool(v.get("multi")), v.get("allValue"), int(v.get("sort") or 0)))
    panels = tuple(Panel(p["id"], p["title"], tuple(t["expr"] for t in p.get("targets", [])), p.get("repeat"))
                   for p in all_panels(doc.get("panels", [])) if p.get("type") != "row")
    return Dashboard(doc["title"], tuple(variables), panels, _range_seconds(doc["time"]["from"]), source)


def read_grafana_dashboard(path: Path) -> Dashboard:
    return grafana_dashboard(json.loads(path.read_text()), str(path))


# --- Grafana's interpolation ------------------------------------------------------------------------------

_REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|]")


def regular_escape(value: str) -> str:
    """Grafana's ``prometheusRegularEscape``: a single value in a label matcher's string."""
    return value.replace("\\", "\\\\").replace("'", "\\\\'")


def regex_escape(value: str) -> str:
    """Grafana's ``prometheusSpecialRegexEscape``: a value inside a ``=~`` regex's string literal
    (a regex backslash, doubled for the string)."""
    return _REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(0), value.replace("\\", "\\\\\\\\"))


@dataclass(frozen=True)
class Chosen:
    """A variable's value: the options Grafana offered and the one chosen (:data:`ALL` or an option)."""
    variable: Variable
    options: tuple[str, ...]
    value: str

    def text(self) -> str:
        """The value as interpolated into a query."""
        v = self.variable
        if not v.multi and not v.include_all:
            return regular_escape(self.value)
        if self.value == ALL:
            if v.all_value is not None:
                return v.all_value
            values = [regex_escape(option) for option in self.options]
            return "(" + "|".join(values) + ")" if len(values) > 1 else "".join(values)
        return regex_escape(self.value)


@dataclass(frozen=True)
class Builtins:
    """Grafana's global variables for a dashboard's range and the data source's scrape interval."""
    scrape_seconds: int
    range_seconds: int
    interval_seconds: int | None = None
    """``$__interval``: the range over the panel's width in points; defaults to the scrape interval
    (a few minutes' range over a normal panel)."""

    def values(self) -> dict[str, str]:
        interval = self.interval_seconds or self.scrape_seconds
        rate = max(interval + self.scrape_seconds, 4 * self.scrape_seconds)
        return {"__rate_interval": f"{rate}s", "__interval_ms": str(interval * 1000), "__interval": f"{interval}s",
                "__range_ms": str(self.range_seconds * 1000), "__range_s": str(self.range_seconds),
                "__range": f"{self.range_seconds}s"}


_REFERENCE = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)\]\]|\$(\w+)")


def interpolate(expr: str, chosen: dict[str, Chosen], builtins: Builtins) -> str:
    """``expr`` with every variable reference replaced as Grafana does (an unknown name is left)."""
    fixed = builtins.values()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3) or match.group(4)
        if match.group(2):
            raise ValueError(f"variable format :{match.group(2)} is not supported here: {expr}")
        if name in fixed:
            return fixed[name]
        if name not in chosen:  # not a variable (label_replace's $1): Grafana leaves it as it is
            return match.group(0)
        return chosen[name].text()
    return _REFERENCE.sub(replace, expr)


# --- variable options, from Prometheus --------------------------------------------------------------------

_LABEL_VALUES = re.compile(r"label_values\((?:(.*),\s*)?(\w+)\)\s*", re.S)
_QUERY_RESULT = re.compile(r"query_result\((.*)\)\s*", re.S)


def _series_text(series: dict[str, Any]) -> str:
    """A ``query_result`` row as Grafana writes it for the variable's regex."""
    labels = {k: v for k, v in series["metric"].items() if k != "__name__"}
    text = series["metric"].get("__name__", "") + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    stamp, value = series["value"]
    return f"{text} {value} {int(float(stamp) * 1000)}"


def variable_options(variable: Variable, query: str, prometheus: PrometheusApi, now: float,
                     range_seconds: int) -> list[str]:
    """The options Grafana would list for ``variable`` whose ``query`` is already interpolated."""
    if match := _LABEL_VALUES.fullmatch(query.strip()):
        selector, label = match.groups()
        params = {"start": str(now - range_seconds), "end": str(now)}
        if selector:
            params["match[]"] = selector
        texts = list(prometheus.get(f"/api/v1/label/{label}/values", **params))
    elif match := _QUERY_RESULT.fullmatch(query.strip()):
        result = prometheus.get("/api/v1/query", query=match.group(1), time=str(now))["result"]
        texts = [_series_text(series) for series in result]
    else:
        raise ValueError(f"variable {variable.name}: only label_values() and query_result() are supported: {query}")
    options: list[str] = []
    pattern = None
    if variable.regex:
        body = variable.regex[1:variable.regex.rindex("/")] if variable.regex.startswith("/") else variable.regex
        pattern = re.compile(body)
    for text in texts:
        if pattern is not None:
            found = pattern.search(text)
            if not found:
                continue
            text = found.group(1) if found.groups() else found.group(0)
        if text not in options:
            options.append(text)
    if variable.sort in (1, 2, 5, 6):  # alphabetical, case-insensitive too (asc, desc)
        options.sort(key=str.lower if variable.sort in (5, 6) else None, reverse=variable.sort in (2, 6))
    elif variable.sort in (3, 4):  # numerical
        options.sort(key=lambda o: float(re.sub(r"[^\d.]", "", o) or 0), reverse=variable.sort == 4)
    return options


def choose_variables(dashboard: Dashboard, prometheus: PrometheusApi, now: float, builtins: Builtins,
                     fixed: dict[str, str] | None = None) -> dict[str, Chosen]:
    """Each variable's options and Grafana's default choice, in the dashboard's order; ``fixed``:
    variables set to a value of one's own (as a user picking one)."""
    chosen: dict[str, Chosen] = {}
    for variable in dashboard.variables:
        if fixed and variable.name in fixed:
            chosen[variable.name] = Chosen(variable, (fixed[variable.name],), fixed[variable.name])
            continue
        options = variable_options(variable, interpolate(variable.query, chosen, builtins), prometheus, now,
                                   dashboard.range_seconds)
        value = ALL if variable.include_all else (options[0] if options else "")
        chosen[variable.name] = Chosen(variable, tuple(options), value)
    return chosen


# --- running every query ----------------------------------------------------------------------------------

@dataclass
class QueryResult:
    panel: Panel
    expr: str
    """As sent to Prometheus (interpolated)."""
    series: int
    error: str | None = None
    repeat_value: str | None = None

    @property
    def has_data(self) -> bool:
        return self.error is None and self.series > 0


@dataclass
class PanelResult:
    panel: Panel
    queries: list[QueryResult] = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        """Every query of the panel (of every repeated copy) returns data."""
        return bool(self.queries) and all(q.has_data for q in self.queries)


@dataclass
class DashboardResult:
    dashboard: Dashboard
    chosen: dict[str, Chosen]
    panels: list[PanelResult]
    not_applicable: list[Panel]

    def counts(self) -> dict[str, int]:
        """Panels; the dashboard's queries (a query with data in every copy of a repeated panel);
        the queries as sent (one per copy); the panels left out."""
        sent = [q for p in self.panels for q in p.queries]
        written: dict[tuple[int, int], bool] = {}
        for p in self.panels:
            copies: dict[str | None, int] = {}
            for q in p.queries:  # a panel's queries in order, once per copy
                index = copies[q.repeat_value] = copies.get(q.repeat_value, -1) + 1
                written[(id(p), index)] = written.get((id(p), index), True) and q.has_data
        return {"panels": len(self.panels), "panels_with_data": sum(p.has_data for p in self.panels),
                "queries": len(written), "queries_with_data": sum(written.values()),
                "queries_sent": len(sent), "queries_sent_with_data": sum(q.has_data for q in sent),
                "not_applicable": len(self.not_applicable)}

    def without_data(self) -> list[str]:
        """One line per query that returned nothing (or failed): panel, query as sent, why."""
        return [f"{self.dashboard.title} / {q.panel.title} (panel {q.panel.id}"
                + (f", {q.panel.repeat}={q.repeat_value}" if q.repeat_value is not None else "") + f"): {q.expr}"
                + (f" -> {q.error}" if q.error else " -> no series")
                for p in self.panels for q in p.queries if not q.has_data]

    def summary(self) -> str:
        c = self.counts()
        skipped = f", {c['not_applicable']} not applicable" if c["not_applicable"] else ""
        sent = (f" ({c['queries_sent_with_data']} of {c['queries_sent']} as sent, a repeated panel's once per value)"
                if c["queries_sent"] != c["queries"] else "")
        return (f"{self.dashboard.title}: {c['panels_with_data']} of {c['panels']} panels and "
                f"{c['queries_with_data']} of {c['queries']} queries{sent} return data{skipped}")


def run_queries(dashboard: Dashboard, prometheus: PrometheusApi, now: float, scrape_seconds: int,
                fixed: dict[str, str] | None = None) -> DashboardResult:
    """Every query of every panel, interpolated as Grafana would, as an instant query at ``now``
    (``fixed``: see :func:`choose_variables`)."""
    builtins = Builtins(scrape_seconds, dashboard.range_seconds)
    chosen = choose_variables(dashboard, prometheus, now, builtins, fixed)
    results = []
    for panel in dashboard.panels:
        if panel.not_applicable:
            continue
        result = PanelResult(panel)
        copies: list[tuple[str | None, dict[str, Chosen]]] = [(None, chosen)]
        if panel.repeat:
            repeated = chosen[panel.repeat]
            values = repeated.options if repeated.value == ALL else (repeated.value,)
            copies = [(value, {**chosen, panel.repeat: Chosen(repeated.variable, repeated.options, value)})
                      for value in values]
            if not copies:
                result.queries += [QueryResult(panel, query, 0, f"${panel.repeat} has no value to repeat the panel "
                                               "over") for query in panel.queries]
        for value, scope in copies:
            for query in panel.queries:
                expr = interpolate(query, scope, builtins)
                try:
                    series = len(prometheus.get("/api/v1/query", query=expr, time=str(now))["result"])
                    result.queries.append(QueryResult(panel, expr, series, repeat_value=value))
                except AssertionError as error:  # PrometheusServer.get: the API's error answer
                    result.queries.append(QueryResult(panel, expr, 0, str(error)[:300], value))
        results.append(result)
    return DashboardResult(dashboard, chosen, results, [p for p in dashboard.panels if p.not_applicable])
