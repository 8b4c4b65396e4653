"""Prometheus text exposition -> flat samples, and the two look-ups collectors need.

Parsing is ``prometheus_client``'s own parser, so anything a Prometheus server accepts from a JMX
exporter, Micrometer or client library parses here too. A NaN sample is a missing value (the JMX
exporter writes NaN for a metric it cannot read): :func:`parse` leaves it out, so :func:`first`
and :func:`total` never return NaN.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Sample:
    """One line of the exposition."""

    name: str
    """The sample name as exposed: counters keep their ``_total`` suffix."""
    labels: dict[str, str]
    """Label name -> value; ``{}`` for a series without labels."""
    value: float
    """Never NaN (see :func:`parse`)."""


def parse(text: str, names: Collection[str] | None = None) -> list[Sample]:
    """Every sample of every metric family, in exposition order, NaN samples left out; with
    ``names``, only the samples of those names (the other lines are dropped before parsing: the
    parser is pure Python, and a broker's ~400 lines cost it ~15 ms, most of them JVM metrics
    nobody here reads).

    Raises ``ValueError`` when ``text`` is not Prometheus text exposition (an HTML error page)."""
    if names is not None:
        wanted = _only(text, names)
        if wanted.strip():  # else parse it all: an HTML error page must still fail to parse
            text = wanted
    samples = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not math.isnan(sample.value):
                samples.append(Sample(sample.name, dict(sample.labels), float(sample.value)))
    return samples


def _only(text: str, names: Collection[str]) -> str:
    """The lines of ``text`` about ``names``: their samples and their ``# HELP``/``# TYPE`` lines
    (which may name a counter without its ``_total``)."""
    wanted = set(names) | {name[:-len("_total")] for name in names if name.endswith("_total")}
    kept = []
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) > 2 and parts[2] in wanted:
                kept.append(line)
        elif line.split("{", 1)[0].split(" ", 1)[0] in wanted:
            kept.append(line)
    kept.append("")
    return "\n".join(kept)


def _matches(sample: Sample, labels: dict[str, str | None]) -> bool:
    # Prometheus semantics: an empty label value is the same as no label.
    return all(sample.labels.get(key, "") == (value or "") for key, value in labels.items())


def first(samples: Iterable[Sample], name: str, /, **labels: str | None) -> float | None:
    """The value of the first sample called ``name`` that has the given labels (other labels may
    be present); ``label=None`` requires the label to be absent. ``None`` when there is none.

    ``first(s, "kafka_server_brokertopicmetrics_bytesinpersec_total", topic=None)`` is the
    broker-wide counter, not one topic's."""
    for sample in samples:
        if sample.name == name and _matches(sample, labels):
            return sample.value
    return None


def total(samples: Iterable[Sample], name: str, /, **labels: str | None) -> float | None:
    """The sum of every sample called ``name`` with the given labels (as in :func:`first`);
    ``None`` when there is none (never a silent zero)."""
    values = [s.value for s in samples if s.name == name and _matches(s, labels)]
    return sum(values) if values else None
