"""What alert delivery to Alertmanager costs the collection cycle during an alert storm: ``--alerts``
firing alerts (one rule, one entity each: a retired application's stopped groups) handed to
:class:`alerting.delivery.AlertDelivery` every cycle, as ``collectors/runner.py`` does.

It prints the CPU seconds per cycle of what the cycle itself does (``observe`` and the snapshot's
``status``), and, in the sending thread, building the payloads of one resend and posting them to a
local HTTP server that accepts them (batches of 64, as Prometheus). The cycle must stay in the
milliseconds whatever Alertmanager does: the sending happens beside it.

    .venv/bin/python bench/alert_delivery.py [--alerts 10000] [--cycles 10]

No Kafka and no Alertmanager are needed. A few seconds.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from alerting.delivery import AlertDelivery  # noqa: E402
from alerting.model import Alert, EvaluationResult  # noqa: E402
from kpulse.config.model import AlertmanagerConfig  # noqa: E402


class _Accepting(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Accepting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = AlertmanagerConfig(urls=(f"http://127.0.0.1:{server.server_port}",), retries=0)
    delivery = AlertDelivery(settings, dashboard_url="http://kpulse:8501", evaluation_interval=10,
                             bootstraps={"bench": "kafka-1:9092"})
    firing = [Alert("ConsumerGroupStatus", "warning", f"group/app-{i}", 120.0, f"group app-{i} is STOP",
                    1_700_000_000.0, "ConsumerGroupStatus") for i in range(args.alerts)]
    evaluation = EvaluationResult(firing, [])
    now = time.time()
    delivery.observe("bench", evaluation, now)
    started = time.process_time()
    for cycle in range(args.cycles):
        delivery.observe("bench", evaluation, now + cycle + 1)
        delivery.status("bench")
    per_cycle = (time.process_time() - started) / args.cycles
    cpu, wall = time.process_time(), time.perf_counter()
    delivery.deliver()
    send_cpu, send_wall = time.process_time() - cpu, time.perf_counter() - wall
    [status] = delivery.status("bench")
    server.shutdown()
    print(f"{args.alerts:,} firing alerts: the cycle's share {per_cycle * 1000:.1f} ms CPU per cycle "
          f"(observe + status); one send of all of them {send_cpu:.2f} s CPU, {send_wall:.2f} s wall "
          f"({status['sent_total']:,} accepted, {status['pending']} pending), in the sending thread")


if __name__ == "__main__":
    main()
