"""kpulse dashboard (later issues)."""
