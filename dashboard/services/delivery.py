"""How the delivery of alerts to Alertmanager goes (``alerting/delivery.py``), from the snapshot's
``alert_delivery`` section, as lines for the Alerts page. Pure."""

from __future__ import annotations

from dashboard.services.health import human_age
from kpulse.snapshot import Snapshot


def delivery_lines(snapshot: Snapshot | None, now: float) -> list[tuple[bool, str]]:
    """How the delivery to each Alertmanager goes (the snapshot's ``alert_delivery``), one line each:
    (healthy, text). No line when no Alertmanager is configured."""
    lines = []
    for delivery in (snapshot.get("alert_delivery") if snapshot else None) or []:
        name, pending = delivery["alertmanager"], delivery["pending"]
        waiting = f"{pending:,} alert{'' if pending == 1 else 's'} not delivered yet"
        if delivery["up"] is False:
            retry = delivery.get("next_attempt_at")
            when = f", next attempt in {human_age(retry - now)}" if retry is not None and retry > now else ""
            failed_at = delivery["last_error_at"]
            assert failed_at is not None, "a failed delivery has the time it failed"
            failed_ago = human_age(now - failed_at)
            lines.append((False, f"Alertmanager {name} is failing (last failure {failed_ago} ago: "
                                 f"{delivery['last_error']}) · {waiting}{when}"))
        elif delivery["up"] is None:
            lines.append((True, f"Alertmanager {name}: nothing sent yet · {waiting}"))
        else:
            sent_at = delivery["last_sent_at"]
            assert sent_at is not None, "an accepted delivery has the time it was accepted"
            sent_ago = human_age(now - sent_at)
            lines.append((True, f"Alertmanager {name}: delivering · last accepted {sent_ago} ago · "
                                f"{delivery['sent_total']:,} sent, {delivery['failed_total']:,} failed since kpulse "
                                f"started · {waiting}"))
    return lines
