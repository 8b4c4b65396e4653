"""Alert rules over the snapshot, their state across cycles, runbooks and the Prometheus rule export."""
