"""How many panels of the peers' Grafana dashboards return data from kpulse's exporter: kafka_exporter's
overview and kafka-lag-exporter's dashboard (their queries are kept under tests/data/grafana/, with
the source and commit), and with ``--shipped`` kpulse's own (docker/grafana/dashboards/).

Starts Debian's Prometheus (``tests/prometheus_server.py``) scraping ``--exporter`` every 2 s, with
the target label ``namespace`` (kafka-lag-exporter's dashboard selects it: Kubernetes service
discovery adds it to a scraped pod's series), waits for ``--scrapes`` scrapes, then runs every query
as Grafana would send it (``tests/grafana_queries.py``: template variables resolved, the instant
query at now) and prints each panel and the totals.

    .venv/bin/kpulse up        # or any cluster, with traffic and groups, and `kpulse collect`
    .venv/bin/python bench/peer_dashboards.py --exporter http://127.0.0.1:9308/metrics [--shipped]

About 15 s. Used for issue 28's before and after figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.grafana_queries import (PEER_DASHBOARDS, DashboardResult, peer_dashboard,  # noqa: E402
                                   read_grafana_dashboard, run_queries)
from tests.prometheus_server import SCRAPE_SECONDS, running_prometheus, static_job  # noqa: E402

SHIPPED = Path(__file__).resolve().parent.parent / "docker" / "grafana" / "dashboards"
NAMESPACE = "kafka"


def report(result: DashboardResult) -> list[str]:
    lines = [result.summary()]
    for panel in result.panels:
        mark = "data" if panel.has_data else "NONE"
        lines.append(f"  [{mark}] {panel.panel.id:>4} {panel.panel.title}")
        lines += [f"           no data: {q.expr}" + (f" ({q.error})" if q.error else "")
                  for q in panel.queries if not q.has_data]
    lines += [f"  [n/a ] {p.id:>4} {p.title}: {p.not_applicable}" for p in result.not_applicable]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--exporter", required=True, help="kpulse's /metrics URL")
    parser.add_argument("--scrapes", type=int, default=6, help="scrapes to wait for before querying (default 6)")
    parser.add_argument("--shipped", action="store_true", help="kpulse's own dashboards too")
    args = parser.parse_args()
    dashboards = [peer_dashboard(path) for path in PEER_DASHBOARDS.values()]
    if args.shipped:
        dashboards += [read_grafana_dashboard(path) for path in sorted(SHIPPED.glob("*.json"))]
    with tempfile.TemporaryDirectory(prefix="kpulse-peer-dashboards-") as directory, running_prometheus(
            Path(directory), [static_job("kpulse", {args.exporter: {"namespace": NAMESPACE}})]) as prometheus:
        prometheus.wait_for(lambda: prometheus.query(f'count_over_time(up{{job="kpulse"}}[5m]) >= {args.scrapes}'),
                            args.scrapes * SCRAPE_SECONDS * 3 + 30, f"{args.scrapes} scrapes of {args.exporter}")
        now = time.time()
        for dashboard in dashboards:
            print("\n".join(report(run_queries(dashboard, prometheus, now, SCRAPE_SECONDS))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
